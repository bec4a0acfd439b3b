# eco: the two commands.
#   make run   - install what is missing, build, and bring up the local cluster
#   make test  - install what is missing, then run every test and the lints
#
# Everything is built once, in the dev profile, and reused by every step.

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: run test deps build image integration-etcd34 upgrade-matrix clean-run chaos chaos-aws soak bench-snapshot-s3 bench-snapshot-codec bench-tls bench-archive bench-pitr bench-rpo bench-scale bench-first-run chart-check terraform-check deb compat

deps:
	bash scripts/install-deps.sh

build: deps
	$(CARGO) build --workspace --all-targets

run:
	bash scripts/run-local.sh

test: deps
	bash scripts/test.sh

# The Helm chart alone (chart/): helm lint and template over chart/ci/,
# every object through kubernetes-validate --strict (1.29, 1.31, 1.33), the
# bad value sets of chart/ci-bad/ refused; eco.toml of each value set in
# target/chart/<set>/. Seconds, no cluster (docs/kubernetes.md).
chart-check:
	bash scripts/install-chart-tools.sh
	bash scripts/check-chart.sh

# The Terraform module alone (terraform/), offline (no provider can be
# downloaded): terraform fmt, python-hcl2 parsing, variables and their
# validations (terraform plan on variables.tf), the instances' IAM policy
# == docs/aws.md's, the module's invariants, checkov with
# terraform/.checkov.yaml (no failed check), the templates rendered. About
# 20 s; output in target/terraform/.
terraform-check:
	bash scripts/install-terraform-tools.sh && bash scripts/check-terraform.sh

# eco's Debian package (release build): target/deb/eco_<version>_<arch>.deb
# with the systemd unit (scripts/deb/eco.service), the eco user, a default
# config; reproducible (scripts/build-deb.sh, docs/aws.md).
deb: deps
	$(CARGO) build --release -p eco
	bash scripts/build-deb.sh --eco target/release/eco --out target/deb

# The OCI image of eco (release build), built offline and reproducibly with
# umoci, from scratch: target/image/eco-oci (an OCI image layout) and
# target/image/eco-<tag>.oci.tar (the same as an oci-archive); see
# docs/image.md. IMAGE_TAG sets the tag (default: eco's version);
# IMAGE_FLAGS=--check-reproducible builds it twice and compares.
# ETCD_VERSION picks the image's etcd 3.5 release (default: 3.5.30, the
# default of scripts/etcd-versions; any release scripts/install-etcd.sh
# installed, e.g. ETCD_VERSION=3.5.16).
IMAGE_TAG ?=
IMAGE_FLAGS ?=
ETCD_VERSION ?=
image: deps
	$(CARGO) build --release -p eco
	bash scripts/build-image.sh --eco target/release/eco --out target/image $(if $(IMAGE_TAG),--tag $(IMAGE_TAG)) $(if $(ETCD_VERSION),--etcd $(ETCD_VERSION)) $(IMAGE_FLAGS)

# The real-process failure matrix with 3 and 5 instances (release build);
# reports and timelines under target/chaos/.
# RUNS=3 runs each scenario three times and adds the medians.
RUNS ?= 1
# Every real-etcd integration test of the 3.4 pass, and the three make test
# leaves to 3.5 (formation, leaving, lifecycle), on Debian's etcd 3.4.
integration-etcd34: deps
	ECO_TEST_ETCD_VERSION=3.4 $(CARGO) test -p eco --test single_instance --test bad_input --test membership --test snapshots --test lifecycle --test resize --test formation --test wal --test quorum_loss --test leaving --test auth --test tls_generated --test tls_migration -- --skip over_generated_tls

# The etcd upgrade matrix on real binaries under a write load (debug
# build): 3.4.23 → 3.5.16 (as in make test), 3.4.23 → 3.5.16 → 3.5.30, and
# 3.5.16 → 3.5.30; each step's write gap printed (`upgrade:` lines), the
# figures of docs/benchmarks.md.
upgrade-matrix: deps
	$(CARGO) test -p eco --test upgrade -- --include-ignored --test-threads 1 --nocapture

# eco beside its previous release (scripts/releases), built from the
# repository's history: every mixed-version test (make test runs all but
# the ones marked ignored). Results: docs/benchmarks.md, "eco across its
# versions".
compat: deps
	bash scripts/build-release.sh
	$(CARGO) test -p eco --test compat -- --include-ignored --test-threads 1 --nocapture

chaos: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations chaos --scenario all --instances 3 --runs $(RUNS) --out target/chaos
	./target/release/simulations chaos --scenario all --instances 5 --runs $(RUNS) --out target/chaos

# The AWS scenarios of the matrix on the AWS provider and the S3 store of
# the local AWS emulator (moto + the test kit's additions), 3 and 5
# instances (release build); reports under target/chaos-aws/.
AWS_SCENARIOS ?= kill-etcd-leader,wipe-one,wipe-majority,zone-loss,stop-wipe-all,store-outage,crash-during-recovery
chaos-aws: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations chaos --provider aws --scenario $(AWS_SCENARIOS) --instances 3 --runs $(RUNS) --out target/chaos-aws
	./target/release/simulations chaos --provider aws --scenario $(AWS_SCENARIOS) --instances 5 --runs $(RUNS) --out target/chaos-aws

# The monkey soak: random faults on one cluster under the write ledger, with
# 3 and then 5 instances (release build); reports under target/soak/.
# SOAK=30m and SEED=1 by default; the same seed replays the same schedule.
SOAK ?= 30m
SEED ?= 1
soak: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations chaos --monkey --instances 3 --duration $(SOAK) --seed $(SEED) --out target/soak
	./target/release/simulations chaos --monkey --instances 5 --duration $(SOAK) --seed $(SEED) --out target/soak

# M7 on S3: eco's snapshot of a 1 GiB etcd streamed into S3 (the local AWS
# emulator) against etcdctl snapshot save + aws s3 cp, 3 runs each,
# alternating (release build); see docs/benchmarks.md. Add --json for JSON.
bench-snapshot-s3: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations snapshot-bench --store s3 --size-mib 1024 --runs 3

bench-tls: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations tls-bench --seconds 20 --clients 16 --runs 3

# The change archive: throughput with it off and on (alternating), its
# bytes per operation and upload p99, and 20 sampled revisions per run
# restored with eco restore --at-revision and compared key for key
# (release build); see docs/benchmarks.md. Add --json for JSON.
bench-archive: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations archive-bench --seconds 60 --clients 16 --runs 3 --points 20

# The change archive's points in time over a 10-minute run: 4 writers,
# a snapshot every 3 minutes (a point is replayed from the newest one at
# or before it; [snapshot.retention]'s keep_last = 5 keeps them all), 20
# sampled revisions restored with eco restore --at-revision and compared
# key for key (release build); see docs/benchmarks.md.
bench-pitr: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations archive-bench --archive-only --seconds 600 --runs 1 --points 20 --snapshot-interval-s 180 --clients 4 --seed 7

# What a total loss costs: wipe-all (every disk lost at once) under a load
# paced at 800 writes/s from 12 writers, 10 runs at 3 and at 5 instances (release
# build); each run's loss window and load are in the JSON and the
# report under target/chaos-rpo/; see docs/benchmarks.md.
bench-rpo: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations chaos --scenario wipe-all --instances 3 --runs 10 --rate 800 --writers 12 --out target/chaos-rpo
	./target/release/simulations chaos --scenario wipe-all --instances 5 --runs 10 --rate 800 --writers 12 --out target/chaos-rpo

# Snapshot time, size and memory of a 1 GiB etcd of Kubernetes-like
# objects with eco's snapshots plain, then compressed and encrypted
# (zstd+age), against etcdctl snapshot save (release build); see
# docs/benchmarks.md.
bench-snapshot-codec: deps
	$(CARGO) build --release -p eco -p simulations
	./target/release/simulations snapshot-bench --fill mixed --size-mib 1024 --runs 3 --encoding none
	./target/release/simulations snapshot-bench --fill mixed --size-mib 1024 --runs 3 --encoding zstd
	./target/release/simulations snapshot-bench --fill mixed --size-mib 1024 --runs 3 --encoding zstd+age

# eco at 1, 4 and 8 GiB: one etcd member filled with Kubernetes-like
# objects, updates and compactions; snapshots to a directory and to S3
# against etcdctl (+ aws s3 cp), eco restore against etcdutl, and the
# check of eco snapshot import, 3 runs each, alternating (release build;
# ~40 GB free disk for 8 GiB, each size removed before the next). The
# JSON goes to target/scale-bench.json, the plot to
# target/scale-bench.svg; then an empty-disk instance of three back to a
# voter at 1 and 4 GiB (target/scale-rejoin.json), and eco beside an
# 8 GiB member at rest (target/scale-steady.json); see docs/benchmarks.md.
# A newcomer's first `make run`, timed: a fresh clone (no .tools, no
# target) to three voters (docs/benchmarks.md, "The first make run").
bench-first-run:
	bash scripts/bench-first-run.sh

bench-scale: deps
	$(CARGO) build --release -p eco -p simulations
	mkdir -p target
	./target/release/simulations scale-bench --sizes-mib 1024,4096,8192 --runs 3 --work-dir target --json > target/scale-bench.json
	python3 scripts/plot-scale-bench.py < target/scale-bench.json > target/scale-bench.svg
	./target/release/simulations scale-bench --sizes-mib 1024,4096 --measure rejoin --json > target/scale-rejoin.json
	./target/release/simulations scale-bench --sizes-mib 8192 --measure steady --json > target/scale-steady.json
	./target/release/simulations scale-bench --sizes-mib 8192 --measure quorum-loss,defrag --json > target/scale-faults.json

clean-run:
	rm -rf .run
