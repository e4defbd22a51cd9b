# The two commands of the README: `make serve` and `make test`. Both install what is missing
# first (once): the Debian packages OCR needs (scripts/install-system-packages.sh) and the local
# embedding model (scripts/install-model.sh); then they run cargo.

.PHONY: serve test model packages bench

packages:
	scripts/install-system-packages.sh

model:
	scripts/install-model.sh

serve: packages model
	cargo run --release -- serve

test: packages model
	cargo test --workspace

bench:
	cargo bench --bench http
