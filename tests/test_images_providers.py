"""Plots reach the model: a `python` call drawing a matplotlib figure, through the real
anthropic and openai SDKs against the local wire server, in a real IPython shell; the PNG is
stored in the session and shown by `/history` and the export."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.llm.messages import NO_VISION_NOTE
from larik_jupyter.session.export import render_markdown
from larik_jupyter.session.reader import load_entries
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import as_stored, personal, wire_model
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-image-test-0123456789abcdef"
DRAW = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 3))\nplt.plot([1, 4, 9])\nprint('drawn')"
)


def small_png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (20, 10), "blue").save(out, format="PNG")
    return out.getvalue()


def png_of(data: str) -> bytes:
    raw = base64.b64decode(data)
    assert raw.startswith(b"\x89PNG\r\n\x1a\n")
    return raw


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_matplotlib_figure_reaches_the_model_and_the_history(
    kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": DRAW}}]},
        {"content": [{"type": "text", "text": "The curve rises."}]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model(kind, server, KEY, monkeypatch)
        shell, magics = shell_with_magics(project, model)
        try:
            larik(shell, "--no-context plot the squares")
            with capture_output() as shown:
                larik(shell, "/history")
        finally:
            shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')")
        requests = server.requests
    body = requests[1].body
    if kind == "anthropic":
        result = body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result"
        text, image = result["content"]
        assert text["type"] == "text" and "drawn" in text["text"]
        assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
        sent = png_of(image["source"]["data"])
    else:
        tool_message, image_message = body["messages"][-2:]
        assert tool_message["role"] == "tool" and "drawn" in tool_message["content"]
        assert "[image: in the next user message]" in tool_message["content"]
        assert image_message["role"] == "user"
        note, part = image_message["content"]
        assert note["type"] == "text" and tool_message["tool_call_id"] in note["text"]
        url = part["image_url"]["url"]
        assert part["type"] == "image_url" and url.startswith("data:image/png;base64,")
        sent = png_of(url.split(",", 1)[1])
    assert magics.agent is not None
    entries = load_entries(magics.agent.session_path).entries
    stored = [b for e in entries if e.message for b in e.message.tool_results()][0]
    assert not isinstance(stored.content, str)
    image_block = stored.content[1]
    assert image_block.type == "image" and png_of(image_block.source["data"]) == sent
    history = "".join(o.data.get("text/markdown", "") for o in shown.outputs)
    assert "![image/png](data:image/png;base64," in history and "The curve rises." in history
    assert "![image/png](data:image/png;base64," in render_markdown(magics.agent.session_path, entries, redactor=redactor_for(None))
    magics.agent.close()


def test_non_figure_rich_values_and_svg(project: Path) -> None:
    shell = InteractiveShell.instance()
    from larik_jupyter.tools import Env, default_tools
    from larik_jupyter.tools.host import KernelHost

    env = Env(cwd=project, root=project, host=KernelHost(shell.user_ns))
    python = default_tools(env)["python"]
    data = base64.b64encode(small_png()).decode()
    code = (
        "import base64\n"
        "class Png:\n"
        "    def _repr_png_(self):\n"
        f"        return base64.b64decode({data!r})\n"
        "class Svg:\n"
        "    def _repr_svg_(self):\n"
        "        return '<svg/>'\n"
    )
    python.run(env, {"code": code})
    png = python.run(env, {"code": "Png()"})
    assert len(png.images) == 1 and png.images[0].source["media_type"] == "image/png"
    svg = python.run(env, {"code": "Svg()"})
    assert not svg.images and "SVG images are not sent" in svg.content


@pytest.mark.parametrize("vision", [None, True])
def test_a_model_without_vision_gets_a_text_note(project: Path, vision: bool | None) -> None:
    script = [
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": DRAW}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ]
    with ScriptedHTTPServer(script) as server:
        settings: dict[str, object] = {"base_url": server.openai_base_url}
        if vision is not None:
            settings["vision"] = vision
        personal({"providers": {"openai-compatible": settings}})
        shell, magics = shell_with_magics(project, "openai-compatible:local-model")
        try:
            larik(shell, "--no-context plot")
        finally:
            shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')")
        body = server.requests[1].body
    assert magics.agent is not None
    magics.agent.close()
    sent = json.dumps(body["messages"])
    if vision:
        assert body["messages"][-1]["content"][1]["type"] == "image_url"
    else:
        assert "image_url" not in sent and NO_VISION_NOTE in sent


def test_live_view_shows_the_figure_as_history_does(project: Path) -> None:
    from larik_jupyter import Agent, KernelHost
    from larik_jupyter.frontends.notebook.render import parts_from_messages, render_parts
    from larik_jupyter.frontends.notebook.view import TranscriptView
    from larik_jupyter.session.state import replay
    from tests.agent_helpers import done, scripted, tool

    model = scripted(project.parent, [tool("python", code=DRAW)], done("Drawn."))
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    view = TranscriptView()
    agent.subscribe(view.handle)
    try:
        agent.run("plot")
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    live = render_parts(view.parts)
    stored = replay(load_entries(agent.session_path).entries).all
    agent.close()
    assert "![image/png](data:image/png;base64," in live
    assert render_parts(parts_from_messages(list(stored), include_prompts=False)) == as_stored(live)
