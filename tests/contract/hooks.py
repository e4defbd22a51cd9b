"""schemathesis hooks for memvault's contract run (tests/contract/run.sh).

Three rules that a JSON schema cannot state (they relate two values, or a value and the
caller's account) are applied to the requests schemathesis means to be valid, just before they
are sent; requests meant to be invalid are sent as generated. The server answers 400 naming
`validUntil` or `workspaceId` when a rule is broken, and tests in tests/api cover those answers.

- A memory's `validUntil` is later than its `validFrom`.
- A request that names its workspace twice (query and body) names the same one.
- A signed-in member of several workspaces names the one meant (MEMVAULT_CONTRACT_WORKSPACE,
  set by run.sh for the cookie run): sign-ups and workspaces made during the run add
  memberships.
"""

import os
import re

import schemathesis

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$"
)


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _instant(value):
    """Seconds since the epoch (any year, as the server's parser reads it), or None."""
    if not isinstance(value, str):
        return None
    match = _RFC3339.match(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = float(match.group(7) or 0)
    offset = 0
    if match.group(9):
        sign = 1 if match.group(9) == "+" else -1
        offset = sign * (int(match.group(10)) * 3600 + int(match.group(11)) * 60)
    days = _days_from_civil(year, month, day)
    return days * 86400 + hour * 3600 + minute * 60 + second + fraction - offset


def _takes_workspace_in_query(case):
    try:
        return any(getattr(p, "name", None) == "workspaceId" for p in case.operation.query)
    except TypeError:
        return False


@schemathesis.hook
def before_call(context, case, kwargs):
    meta = getattr(case, "_meta", None)
    if meta is not None and meta.generation.mode.is_negative:
        return
    body = case.body if isinstance(case.body, dict) else None
    query = case.query if isinstance(case.query, dict) else None
    if body is not None:
        start, end = _instant(body.get("validFrom")), _instant(body.get("validUntil"))
        if start is not None and end is not None and end <= start:
            body.pop("validUntil")
        named = (query or {}).get("workspaceId")
        if isinstance(named, str) and isinstance(body.get("workspaceId"), str):
            body["workspaceId"] = named
    workspace = os.environ.get("MEMVAULT_CONTRACT_WORKSPACE")
    named = (query or {}).get("workspaceId") or (body or {}).get("workspaceId")
    if getattr(case, "media_type", None) == "multipart/form-data":
        # Uploads are only tested for what they refuse (schemathesis.toml).
        return
    if workspace and not named:
        if _takes_workspace_in_query(case):
            if case.query is None:
                case.query = {}
            case.query["workspaceId"] = workspace
        elif body is not None:
            body["workspaceId"] = workspace
