"""One tool call traced at several layers: the lower tool spans fold into the call, not calls of their own.

An agent framework traces the tool it runs (`execute_tool get_weather`). When that tool is an MCP tool,
the MCP client traces the request and the MCP server traces its handling, and the MCP semantic
conventions make both `execute_tool` spans of the same tool (`gen_ai.tool.name`, `mcp.method.name =
tools/call`), the server's often in another service. Read as calls, each lower span sits under a tool
span, which is how an uninstrumented sub-agent's call looks, so each became an inferred run of its own:
one call through MCP gave up to three runs, and an expectation selecting by service matched the
spurious ones.

Rule: a tool span whose nearest tool ancestor, with no run span between them, has the same tool name
and, when both carry a call id, the same call id, is that call seen one layer down. It is folded into the
call (the outermost span of the chain of layers): it is neither a call nor a run, and is counted
(`ExtractStats.skipped["tool_layer"]`).

- The name is what the layers share: MCP spans carry no `gen_ai.tool.call.id` (the model's call id), and
  their `jsonrpc.request.id` is numbered per connection (a gateway between client and server numbers
  again), so it cannot tell one call from another across layers. A call id, when both spans carry one,
  must agree: two ids that differ are two calls.
- A run span between them makes the lower span a sub-agent's call (a `search` tool whose implementation
  runs an agent that calls its own `search`): it stays a call of that run. Without one, a same-named tool
  under a tool is taken for a layer whatever lies between (HTTP transport spans, an uninstrumented
  wrapper): a tool that calls a tool of its own name directly is far rarer than a traced layer.
- The call keeps its own span's values (result, error, start, span id), and its arguments unless it did
  not capture them: content capture is opt-in per instrumentation, so a framework may have it off while
  the MCP server records `gen_ai.tool.call.arguments`. Those are this call's arguments as the tool
  received them, and leaving the call `not_captured` would fail argument rules on a call whose arguments
  the trace holds; the nearest layer that captured them gives them. So does a call id the call's span lacks
  (OpenInference's AutoGen TOOL span has none; AutoGen's own `execute_tool` below it has the model's).
  Results are not taken: a result of None does not say whether it was captured. Nor is a failure, but where
  the call's span cannot record one
  (`ToolRead.failure_recorded` False: openinference-instrumentation-autogen-agentchat sets its TOOL span OK
  before it checks the tool's result): the nearest layer that failed then gives the call its error (AutoGen's
  own `execute_tool` span, one layer down, has it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from toolscore.collector.extract.conventions.base import NOT_CAPTURED, ToolRead

__all__ = ["fold_layers", "same_call"]


def same_call(outer: ToolRead, inner: ToolRead) -> bool:
    """Whether `inner`, a tool span under `outer` with no run span between, is `outer`'s call one layer down."""
    if inner.name is None or inner.name != outer.name:
        return False
    return outer.call_id is None or inner.call_id is None or outer.call_id == inner.call_id


def fold_layers(reads: dict[str, ToolRead], above: Mapping[str, str]) -> dict[str, str]:
    """The tool spans that are layers of a call, each with the span id of that call (its outermost layer).

    `reads`: the tool spans' reads by span id; `above`: a tool span's nearest tool ancestor with no run
    span between them, for the spans that have one. A call that did not capture its arguments gets
    those of its nearest layer that did, replaced in `reads`. Spans whose parents loop (a bad exporter)
    are left unfolded: the loop has no outermost layer.
    """
    layer_of = {
        span_id: up
        for span_id, up in above.items()
        if up in reads and span_id in reads and same_call(reads[up], reads[span_id])
    }
    folded: dict[str, tuple[str, int]] = {}
    for span_id in layer_of:
        top, depth, seen = span_id, 0, {span_id}
        while top in layer_of:
            top, depth = layer_of[top], depth + 1
            if top in seen:
                break
            seen.add(top)
        else:
            folded[span_id] = (top, depth)
    _fill_arguments(reads, folded)
    return {span_id: top for span_id, (top, _) in folded.items()}


def _fill_arguments(reads: dict[str, ToolRead], folded: Mapping[str, tuple[str, int]]) -> None:
    """Give each call that did not capture its arguments those of its nearest layer that did, each call without a
    call id that of its nearest layer with one, and each call whose span cannot record a failure the error of its
    nearest layer that failed.

    Nearest first, then by span id, so that the same spans always give the same values.
    """
    for span_id, (top, _) in sorted(folded.items(), key=lambda item: (item[1][1], item[0])):
        layer, call = reads[span_id], reads[top]
        if layer.args is not NOT_CAPTURED and call.args is NOT_CAPTURED:
            reads[top] = call = dataclasses.replace(call, args=layer.args)
        if layer.call_id is not None and call.call_id is None:
            reads[top] = call = dataclasses.replace(call, call_id=layer.call_id)
        if layer.error and not call.error and not call.failure_recorded:
            reads[top] = dataclasses.replace(call, error=True, error_type=layer.error_type)
