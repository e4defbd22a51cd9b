"""The README's quickstart through a typed client generated from memvault's OpenAPI document.

Usage: quickstart.py BASE_URL API_KEY (the package `memvault_client`, made by
openapi-python-client from BASE_URL/api/openapi.json, on PYTHONPATH; run by run.sh).

Saves a memory, saves what supersedes it, searches, reads the profile and the history, uploads
a document, waits until it is processed and searches the vault; every answer is read through
the generated models, so a response that disagrees with its schema fails here. Prints
progress to stderr and exits non-zero on the first failed check.
"""

import io
import sys
import time

from memvault_client import AuthenticatedClient
from memvault_client.api.context_vault import get_document, upload
from memvault_client.api.context_vault import search as vault_search
from memvault_client.api.memories import create, history, profile, search
from memvault_client.models import (
    CreateMemory,
    DocumentAccepted,
    DocumentDetail,
    History,
    Profile,
    SaveResult,
    SaveStatus,
    SearchResults,
    UploadForm,
    VaultSearchResults,
)
from memvault_client.types import File

SCOPE = "user-42"
HANDBOOK = b"""# Employee handbook

## Time off

Every employee has 25 vacation days a year. Unused days carry over until March.

## Equipment

Laptops are replaced every three years.
"""


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def main():
    base, key = sys.argv[1:3]
    client = AuthenticatedClient(
        base_url=base, token=key, prefix="", auth_header_name="X-API-Key",
        raise_on_unexpected_status=True, timeout=60,
    )
    with client:
        first = create.sync(client=client, body=CreateMemory(content="I live in Paris", scope=SCOPE))
        check(isinstance(first, SaveResult) and first.status == SaveStatus.CREATED, first)
        moved = create.sync(client=client, body=CreateMemory(content="I live in Berlin", scope=SCOPE))
        check(isinstance(moved, SaveResult) and moved.status == SaveStatus.SUPERSEDED, moved)
        check(moved.memory.version == 2 and moved.memory.root_id == first.memory.id, moved.memory)
        log("saved and superseded", moved.memory.id)

        found = search.sync(client=client, q="where do I live", scope=SCOPE)
        check(isinstance(found, SearchResults) and found.results, found)
        check(found.results[0].content == "I live in Berlin", found.results[0])

        known = profile.sync(client=client, scope=SCOPE)
        check(isinstance(known, Profile), known)
        check(any("Berlin" in line for line in known.static + known.dynamic), known)

        versions = history.sync(str(moved.memory.id), client=client, scope=SCOPE)
        check(isinstance(versions, History), versions)
        contents = [entry.content for entry in versions.history] + [versions.current.content]
        check("I live in Paris" in contents and "I live in Berlin" in contents, contents)
        log("searched, profiled, history of", len(contents))

        accepted = upload.sync(client=client, body=UploadForm(file=File(
            payload=io.BytesIO(HANDBOOK), file_name="handbook.md", mime_type="text/markdown")))
        check(isinstance(accepted, DocumentAccepted), accepted)
        document_id = str(accepted.document.id)
        deadline = time.monotonic() + 120
        while True:
            detail = get_document.sync(document_id, client=client)
            check(isinstance(detail, DocumentDetail), detail)
            if detail.document.status in ("completed", "failed", "cancelled"):
                break
            check(time.monotonic() < deadline, f"document stuck: {detail.document.status}")
            time.sleep(0.2)
        check(detail.document.status == "completed", detail.document)
        log("document processed:", detail.document.chunk_count, "chunks")

        answer = vault_search.sync(client=client, q="how many vacation days")
        check(isinstance(answer, VaultSearchResults) and answer.chunks, answer)
        check("25 vacation days" in answer.chunks[0].content, answer.chunks[0].content)
        log("vault search found", answer.chunks[0].section_path)
    print("quickstart ok")


if __name__ == "__main__":
    main()
