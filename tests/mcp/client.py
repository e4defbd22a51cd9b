"""Drives memvault's MCP server with the official MCP Python SDK (package `mcp`).

Usage: client.py MCP_URL OWNER_KEY VIEWER_KEY

Connects over streamable HTTP with an API key, lists the tools and calls every one of them,
checking each answer; checks that a wrong key cannot connect and that a viewer's key gets a
tool error (not a result) from a write tool. Prints progress to stderr and, last on stdout, a
JSON report {"ok": true, "toolsCalled": [...]}; exits non-zero on the first failed check.
Run by tests/api/mcp.rs.
"""

import asyncio
import json
import sys
import time

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

EXPECTED_TOOLS = {
    "memory_save", "memory_search", "memory_list", "memory_get", "memory_update",
    "memory_forget", "memory_history", "memory_feedback", "memory_profile",
    "vault_search", "vault_add_fact", "vault_ingest", "vault_list_documents",
    "vault_document_status",
}
SCOPE = "sdk-user"


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


class Session:
    """One connected client session with a key."""

    def __init__(self, url, key):
        self.url = url
        self.key = key
        self.called = []

    async def __aenter__(self):
        self.http = httpx2.AsyncClient(headers={"Memvault-API-Key": self.key}, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write)
        await self.session.__aenter__()
        self.info = await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()

    async def call(self, name, arguments, expect_error=False):
        result = await self.session.call_tool(name, arguments)
        self.called.append(name)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        log(f"{name}: error={result.is_error} {text[:120]!r}")
        check(result.is_error == expect_error, f"{name} is_error={result.is_error}: {text}")
        check(text.strip(), f"{name} answered no readable text")
        check(isinstance(result.structured_content, dict), f"{name} has no structured content")
        return result.structured_content, text


async def run(url, owner_key, viewer_key):
    async with Session(url, owner_key) as s:
        check(s.info.server_info.name == "memvault", f"server name {s.info.server_info.name}")
        log("protocol", s.info.protocol_version)
        tools = (await s.session.list_tools()).tools
        names = {tool.name for tool in tools}
        check(names == EXPECTED_TOOLS, f"tools {sorted(names)}")
        for tool in tools:
            check(tool.description and len(tool.description) > 30, f"{tool.name} description")
            check(tool.input_schema.get("type") == "object", f"{tool.name} schema")

        saved, _ = await s.call("memory_save", {"content": "I live in Paris", "scope": SCOPE})
        check(saved["status"] == "created", saved)
        check(saved["memory"]["source"] == "mcp", saved)
        first = saved["memory"]["id"]
        moved, _ = await s.call("memory_save", {"content": "I live in Berlin", "scope": SCOPE})
        check(moved["status"] == "superseded", moved)
        current = moved["memory"]["id"]
        await s.call("memory_save", {"content": "I prefer tea over coffee", "scope": SCOPE,
                                     "category": "preference"})

        found, text = await s.call("memory_search", {"q": "what city do I live in",
                                                     "scope": SCOPE, "limit": 3})
        check(found["results"][0]["id"] == current, found)
        check("Berlin" in text, text)
        listed, _ = await s.call("memory_list", {"scope": SCOPE, "limit": 10})
        check(listed["total"] == 2, listed)
        got, _ = await s.call("memory_get", {"id": current, "scope": SCOPE})
        check(got["version"] == 2 and got["supersedesId"] == first, got)
        history, _ = await s.call("memory_history", {"id": current, "scope": SCOPE})
        check([h["id"] for h in history["history"]] == [first], history)
        updated, _ = await s.call("memory_update", {"id": current, "scope": SCOPE,
                                                    "project": "relocation"})
        check(updated["project"] == "relocation", updated)
        rated, _ = await s.call("memory_feedback", {"id": current, "scope": SCOPE,
                                                    "rating": "helpful"})
        check(rated["success"] is True, rated)
        profile, text = await s.call("memory_profile", {"scope": SCOPE})
        check(any("Berlin" in line for line in profile["static"]), profile)
        tea = (await s.call("memory_search", {"q": "tea", "scope": SCOPE}))[0]["results"][0]
        forgot, _ = await s.call("memory_forget", {"id": tea["id"], "scope": SCOPE,
                                                   "reason": "test"})
        check(forgot["success"] is True, forgot)

        fact, _ = await s.call("vault_add_fact", {"content": "Expense reports are due on the 5th "
                                                  "of each month."})
        check(fact["memory"]["memoryType"] == "company", fact)
        accepted, _ = await s.call("vault_ingest", {
            "title": "Travel policy",
            "content": "# Travel policy\n\nEmployees book flights through the travel desk. "
                       "Economy class is required for flights under six hours. Hotel stays are "
                       "reimbursed up to 180 euros a night.",
        })
        document = accepted["document"]["id"]
        documents, _ = await s.call("vault_list_documents", {})
        check(any(d["id"] == document for d in documents["documents"]), documents)
        status = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            detail, _ = await s.call("vault_document_status", {"documentId": document})
            status = detail["document"]["status"]
            if status in ("completed", "failed", "cancelled"):
                break
            await asyncio.sleep(0.3)
        check(status == "completed", f"document status {status}")
        results, text = await s.call("vault_search", {"q": "hotel reimbursement per night",
                                                      "mode": "hybrid", "limit": 5})
        check(results["chunks"] and "180 euros" in results["chunks"][0]["content"], results)
        check("Travel policy" in text, text)

        # Errors are tool errors with the REST message and code.
        bad, text = await s.call("memory_save", {"content": "", "scope": SCOPE}, expect_error=True)
        check(bad["code"] == "HTTP_400" and "content" in text, bad)
        called = sorted(set(s.called))

    # A viewer reads but may not write.
    async with Session(url, viewer_key) as v:
        await v.call("memory_search", {"q": "city", "scope": SCOPE})
        refused, text = await v.call("memory_save", {"content": "Viewers cannot save",
                                                      "scope": SCOPE}, expect_error=True)
        check(refused["code"] == "HTTP_403" and "your role (viewer)" in text, refused)

    # A wrong key does not get in: 401 with a WWW-Authenticate challenge.
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Memvault-API-Key": "mc_wrong_key_0000000000000000000",
                                          "Accept": "application/json, text/event-stream"})
        check(answer.status_code == 401, f"wrong key: {answer.status_code}")
        check(answer.headers.get("www-authenticate", "").startswith("Bearer"), "no challenge")
    return called


def main():
    url, owner_key, viewer_key = sys.argv[1:4]
    called = asyncio.run(run(url, owner_key, viewer_key))
    check(set(called) == EXPECTED_TOOLS, f"not every tool was called: {called}")
    print(json.dumps({"ok": True, "toolsCalled": called}))


if __name__ == "__main__":
    main()
