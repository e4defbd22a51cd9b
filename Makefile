# The two commands of the README: `make serve` and `make test`. Both install what is missing
# first (once): the Debian packages OCR needs (scripts/install-system-packages.sh) and the local
# embedding model (scripts/install-model.sh); `make test` also installs the MCP Python SDK its
# MCP client test drives the server with (scripts/install-mcp-client.sh); then they run cargo.

.PHONY: serve test model packages mcp-client bench

packages:
	scripts/install-system-packages.sh

model:
	scripts/install-model.sh

mcp-client: packages
	scripts/install-mcp-client.sh

serve: packages model
	cargo run --release -- serve

test: packages model mcp-client
	cargo test --workspace

bench:
	cargo bench --bench http
