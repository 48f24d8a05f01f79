"""What a turn does with how a reply stopped, in words for the user and the model.

`refusal` (Anthropic's streaming classifiers): the turn ends as an error and its turn is left
out of later requests (`llm/context.py`). `max_tokens`: a tool call the limit cut is not run;
it gets `cut_call_result` and the user a notice.
"""

from __future__ import annotations

from larik_jupyter.llm.messages import ToolUseBlock


def refused_error(model: str) -> str:
    """The turn's error when the model refused it (stop reason `refusal`)."""
    return (
        f"{model} declined to continue this turn (stop reason `refusal`); the refused turn is "
        "left out of the next requests, so rephrase the prompt and send it again."
    )


def output_limit_notice(model: str, cut: ToolUseBlock | None) -> str:
    """What the user is told when a reply stopped at the output limit (stop reason `max_tokens`)."""
    if cut is None:
        return (
            f"The reply from {model} stopped at its output limit (max_tokens); send \"go on\" for "
            "the rest, or raise `max_tokens` in the provider's config."
        )
    return (
        f"The reply from {model} reached its output limit (max_tokens) in the middle of a "
        f"`{cut.name}` call: the call was not run, and the model was told why."
    )


def cut_call_result(tool: str) -> str:
    """The result a call cut off by the output limit gets instead of running."""
    return (
        f"This `{tool}` call was not run: your reply reached the output limit (max_tokens) while "
        "its input was being written, so the input is incomplete. Send the call again with a "
        "smaller input (write a large file in parts, or edit it piece by piece)."
    )


def max_steps_notice(max_steps: int) -> str:
    """The notice of a turn stopped by `max_steps` (the config's model calls per turn)."""
    return f"Stopped after {max_steps} model calls in one turn (max_steps); send another prompt to continue."
