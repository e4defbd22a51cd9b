# The two commands of the README: `make serve` and `make test`. Both install the local
# embedding model first (once; scripts/install-model.sh), then run cargo.

.PHONY: serve test model bench

model:
	scripts/install-model.sh

serve: model
	cargo run --release -- serve

test: model
	cargo test --workspace

bench:
	cargo bench --bench http
