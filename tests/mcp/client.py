"""Drives memvault's MCP server with the official MCP Python SDK (package `mcp`).

Usage: client.py MCP_URL OWNER_KEY VIEWER_KEY SESSION_COOKIE WORKSPACE_ID FOREIGN_TEXT

Connects over streamable HTTP with an API key, lists the tools and calls every one of them,
checking each answer; checks that a wrong key cannot connect and that a viewer's key gets a
tool error (not a result) from a write tool. Checks the session's life over raw HTTP: a client
that reconnects (a new connection, the same Mcp-Session-Id) keeps its session, and ending it
(DELETE) is answered as the SDKs expect (200; the SDK logs no warning). Then connects as an assistant connector would,
with the SDK's OAuth client: discovery, dynamic registration, authorization as the signed-in
user of SESSION_COOKIE (the consent page approved for WORKSPACE_ID), the code exchange with
PKCE; calls tools with the token (FOREIGN_TEXT, stored in another workspace, must stay out of
reach), refreshes it and revokes it. Prints progress to stderr and, last on stdout, a
JSON report {"ok": true, "toolsCalled": [...]}; exits non-zero on the first failed check.
Run by tests/api/mcp.rs.
"""

import asyncio
import json
import logging
import sys
import time
from urllib.parse import parse_qsl, urlencode, urlparse

import httpx2
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

EXPECTED_TOOLS = {
    "memory_save", "memory_search", "memory_list", "memory_get", "memory_update",
    "memory_forget", "memory_history", "memory_feedback", "memory_profile",
    "vault_search", "vault_add_fact", "vault_ingest", "vault_list_documents",
    "vault_document_status",
}
SCOPE = "sdk-user"
# One connection per request for the plain HTTP checks: the server may close a connection
# after refusing a request whose body it did not read, and a pooled connection would race it.
FRESH_CONNECTIONS = httpx2.Limits(max_keepalive_connections=0)


class Warnings(logging.Handler):
    """Collects what the SDK logs at WARNING and above (e.g. a refused session end)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


SDK_WARNINGS = Warnings()
logging.getLogger("mcp").addHandler(SDK_WARNINGS)


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
    async with httpx2.AsyncClient(timeout=30, limits=FRESH_CONNECTIONS) as http:
        answer = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Memvault-API-Key": "mc_wrong_key_0000000000000000000",
                                          "Accept": "application/json, text/event-stream"})
        check(answer.status_code == 401, f"wrong key: {answer.status_code}")
        check(answer.headers.get("www-authenticate", "").startswith("Bearer"), "no challenge")
    return called


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def session_life(url, key):
    """A session survives the client's reconnects, and ends on DELETE with 200."""
    headers = {"Memvault-API-Key": key, "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}

    def rpc(id_, method, params=None):
        body = {"jsonrpc": "2.0", "method": method}
        if id_ is not None:
            body["id"] = id_
        if params is not None:
            body["params"] = params
        return body

    async with httpx2.AsyncClient(timeout=30, limits=FRESH_CONNECTIONS) as http:
        opened = await http.post(url, headers=headers, json=rpc(1, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "session-life", "version": "1"}}))
        check(opened.status_code == 200, f"initialize: {opened.status_code} {opened.text}")
        session_id = opened.headers.get("mcp-session-id")
        check(session_id, "no Mcp-Session-Id")
        headers["Mcp-Session-Id"] = session_id
        noted = await http.post(url, headers=headers, json=rpc(None, "notifications/initialized"))
        check(noted.status_code == 202, f"initialized: {noted.status_code}")
    # A new client (new connections) carrying the same session id: the session is still there.
    for attempt in range(2):
        async with httpx2.AsyncClient(timeout=30, limits=FRESH_CONNECTIONS) as http:
            listed = await http.post(url, headers=headers, json=rpc(2 + attempt, "tools/list"))
            check(listed.status_code == 200, f"after a reconnect: {listed.status_code} {listed.text}")
            check("memory_save" in listed.text, f"tools after a reconnect: {listed.text[:200]}")
    async with httpx2.AsyncClient(timeout=30, limits=FRESH_CONNECTIONS) as http:
        ended = await http.delete(url, headers=headers)
        check(ended.status_code in (200, 204), f"session end: {ended.status_code} {ended.text}")
        gone = await http.post(url, headers=headers, json=rpc(9, "tools/list"))
        check(gone.status_code == 404, f"an ended session still answers: {gone.status_code}")
    log("session survived reconnects and ended with", ended.status_code)


async def oauth(url, cookie, workspace, foreign_text):
    """The connector flow with the SDK's OAuth client; the browser step is done over HTTP as
    the signed-in user would do it on the consent page."""
    base = url.rsplit("/mcp", 1)[0]
    storage = MemoryStorage()
    answer = {}

    async def redirect_handler(authorize_url):
        query = dict(parse_qsl(urlparse(authorize_url).query))
        check(query.get("code_challenge_method") == "S256", f"PKCE method {query}")
        async with httpx2.AsyncClient(timeout=30, limits=FRESH_CONNECTIONS) as http:
            page = await http.get(authorize_url, headers={"Cookie": cookie})
            check(page.status_code == 200 and workspace in page.text, f"consent page {page.status_code}")
            form = list(query.items()) + [("workspace_id", workspace), ("decision", "approve")]
            form += [("scopes", scope) for scope in query.get("scope", "").split()]
            decided = await http.post(f"{base}/oauth/authorize", content=urlencode(form),
                                      headers={"Cookie": cookie, "Origin": base,
                                               "Content-Type": "application/x-www-form-urlencoded"})
            check(decided.status_code == 303, f"consent decision {decided.status_code}: {decided.text}")
            back = dict(parse_qsl(urlparse(decided.headers["location"]).query))
            answer.update(back)
            log("authorized: code received, iss", back.get("iss"))

    async def callback_handler():
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"),
                                       iss=answer.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="memvault SDK test connector",
            redirect_uris=["http://127.0.0.1:33418/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                saved = await session.call_tool("memory_save", {"content": "Connector memories "
                                                                "live in the approved workspace",
                                                                "scope": "oauth-user"})
                check(not saved.is_error, f"save with a token: {saved.content}")
                check(saved.structured_content["memory"]["source"] == "mcp", saved.structured_content)
                found = await session.call_tool("memory_search", {"q": "approved workspace",
                                                                  "scope": "oauth-user"})
                check(found.structured_content["results"], found.structured_content)
                foreign = await session.call_tool("memory_search", {"q": foreign_text})
                check(foreign_text not in json.dumps(foreign.structured_content), "foreign text leaked")
    check(storage.tokens is not None and storage.client is not None, "no tokens stored")
    client_id = storage.client.client_id
    refresh = storage.tokens.refresh_token
    old_access = storage.tokens.access_token
    log("registered client", client_id, "scopes", storage.tokens.scope)

    async with httpx2.AsyncClient(timeout=30, limits=FRESH_CONNECTIONS) as http:
        async def initialize(token):
            return await http.post(url, headers={
                "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18"},
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "refresh-check", "version": "1"}}})

        renewed = await http.post(f"{base}/oauth/token", data={
            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id})
        check(renewed.status_code == 200, f"refresh: {renewed.status_code} {renewed.text}")
        fresh = renewed.json()
        check(fresh["refresh_token"] != refresh, "the refresh token did not rotate")
        check((await initialize(fresh["access_token"])).status_code == 200, "refreshed token refused")
        again = await http.post(f"{base}/oauth/token", data={
            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id})
        check(again.status_code == 400 and again.json()["error"] == "invalid_grant",
              f"a reused refresh token was accepted: {again.text}")
        check((await initialize(fresh["access_token"])).status_code == 401,
              "reuse did not revoke the family")
        check((await initialize(old_access)).status_code == 401, "old access token still works")
        revoked = await http.post(f"{base}/oauth/revoke", data={"token": fresh["refresh_token"],
                                                                  "client_id": client_id})
        check(revoked.status_code == 200, f"revoke: {revoked.status_code}")
    return client_id


def main():
    url, owner_key, viewer_key, cookie, workspace, foreign_text = sys.argv[1:7]
    called = asyncio.run(run(url, owner_key, viewer_key))
    check(set(called) == EXPECTED_TOOLS, f"not every tool was called: {called}")
    asyncio.run(session_life(url, owner_key))
    client_id = asyncio.run(oauth(url, cookie, workspace, foreign_text))
    check(not SDK_WARNINGS.messages, f"the SDK warned: {SDK_WARNINGS.messages}")
    print(json.dumps({"ok": True, "toolsCalled": called, "oauthClient": client_id}))


if __name__ == "__main__":
    main()
