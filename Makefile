# eco: the two commands.
#   make run   - install what is missing, build, and bring up the local cluster
#   make test  - install what is missing, then run every test and the lints
#
# Everything is built once, in the dev profile, and reused by every step.

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: run test deps build lint unit integration integration-etcd34 fmt-check clean-run chaos

deps:
	bash scripts/install-deps.sh

build: deps
	$(CARGO) build --workspace --all-targets

run: deps
	bash scripts/run-local.sh

test: deps
	bash scripts/test.sh

# The real-process failure matrix with 3 and 5 instances (release build);
# reports and timelines under target/chaos/.
# RUNS=3 runs each scenario three times and adds the medians.
RUNS ?= 1
chaos: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations chaos --scenario all --instances 3 --runs $(RUNS) --out target/chaos
	./target/release/simulations chaos --scenario all --instances 5 --runs $(RUNS) --out target/chaos

clean-run:
	rm -rf .run
