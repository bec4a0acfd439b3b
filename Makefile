# eco: the two commands.
#   make run   - install what is missing, build, and bring up the local cluster
#   make test  - install what is missing, then run every test and the lints
#
# Everything is built once, in the dev profile, and reused by every step.

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: run test deps build lint unit integration integration-etcd34 fmt-check clean-run

deps:
	bash scripts/install-deps.sh

build: deps
	$(CARGO) build --workspace --all-targets

run: deps
	bash scripts/run-local.sh

test: deps
	bash scripts/test.sh

clean-run:
	rm -rf .run
