"""The public surface: what front ends and scripts use of larik_jupyter. The front ends import
this, `records`, the event types (`agent.events`) and the wire modules (`bridge_protocol`,
`mcp_link`, `approval_wire`, `server_link`), nothing else of the core
(`tests/test_surface.py`), so the core's modules can move and split behind it. Each name is
declared once, in the block below, and loads from its module on first access."""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names, type_checking_names

if TYPE_CHECKING:
    from larik_jupyter.agent.mcp import McpManager
    from larik_jupyter.agent.mcp_status import status_table
    from larik_jupyter.agent.options import AgentOptions, OptionKeywords, agent_options
    from larik_jupyter.agent.outcome import TurnOutcome
    from larik_jupyter.agent.permissions import Approver, PermissionAnswer, PermissionRequest
    from larik_jupyter.agent.summary import asked_label, changed_by
    from larik_jupyter.agent.textlog import TextLog
    from larik_jupyter.agent.turn import PromptExtras, TurnOptions
    from larik_jupyter.agent.undo import RewindStopped
    from larik_jupyter.agent.undo_list import TurnChange, undo_list
    from larik_jupyter.agent.undo_report import UndoReport
    from larik_jupyter.agent.worktree import clean_worktrees, list_worktrees, remove_worktree
    from larik_jupyter.analysis.as_notebook import write_notebook
    from larik_jupyter.analysis.branch_diff import diff_branches
    from larik_jupyter.analysis.replay import replay_branch
    from larik_jupyter.api.agent import Agent
    from larik_jupyter.checkpoint.diffs import cell_name, read_current, turn_diffs
    from larik_jupyter.checkpoint.prune import prune as prune_checkpoints
    from larik_jupyter.checkpoint.store import CheckpointStore, TurnInfo, UndoResult
    from larik_jupyter.config.instructions import display_path
    from larik_jupyter.config.layers import PendingApproval, load_config
    from larik_jupyter.config.report import render as render_config
    from larik_jupyter.config.secrets import redactor_for
    from larik_jupyter.config.skills import load_skills
    from larik_jupyter.config.update import (
        approve as approve_pending,
    )
    from larik_jupyter.config.update import (
        find_pending,
        parse_setting_value,
        set_user_setting,
    )
    from larik_jupyter.egress.accounting import RESULT_OF_CALL
    from larik_jupyter.egress.kernel_rules import KernelRules
    from larik_jupyter.egress.ledger import (
        PolicyRecord,
        RequestRecord,
        Withheld,
        ledger_path,
        read_ledger,
    )
    from larik_jupyter.egress.ledger import (
        encode as encode_ledger_record,
    )
    from larik_jupyter.egress.policy import PolicySet
    from larik_jupyter.egress.report import by_turn, rule_lines
    from larik_jupyter.egress.report import render as render_ledger
    from larik_jupyter.egress.tags import Tag, file_tag, tagged, variable_tag
    from larik_jupyter.errors import LarikError, ToolError, exception_text
    from larik_jupyter.frames import frame_of
    from larik_jupyter.frames.reading import sample_lines
    from larik_jupyter.llm.messages import (
        ContentBlock,
        ImageBlock,
        Message,
        RedactedThinkingBlock,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
        is_context_text,
    )
    from larik_jupyter.llm.outside import PREFIX as OUTSIDE_PREFIX
    from larik_jupyter.llm.pricing import cost_label
    from larik_jupyter.llm.provider import Destination
    from larik_jupyter.llm.sdk_import import import_sdk
    from larik_jupyter.llm.sdk_provider import SdkProvider
    from larik_jupyter.llm.select import choose_spec, make_provider
    from larik_jupyter.lsp.diagnostic import HEADING as DIAGNOSTICS_HEADING
    from larik_jupyter.lsp.manager import LspManager
    from larik_jupyter.nbjson.validate import warm as warm_validation
    from larik_jupyter.paths import config_dir, file_kind, is_session_id, project_root, sessions_dir
    from larik_jupyter.plural import counted
    from larik_jupyter.run_sync import run_sync
    from larik_jupyter.session.branch import (
        TreeNode,
        fork_after,
        fork_label,
        fork_tree,
    )
    from larik_jupyter.session.branch import (
        fork as fork_session,
    )
    from larik_jupyter.session.branch import (
        rewind as rewind_session,
    )
    from larik_jupyter.session.call_summary import CellPosition, positions_in_files
    from larik_jupyter.session.catalog import (
        DeleteRefusedError,
        UnknownSessionError,
        all_session_files,
        list_sessions,
        session_cwd,
    )
    from larik_jupyter.session.catalog import (
        delete as delete_session,
    )
    from larik_jupyter.session.catalog import (
        info as session_info,
    )
    from larik_jupyter.session.catalog import (
        resolve as resolve_session,
    )
    from larik_jupyter.session.context_view import context_view
    from larik_jupyter.session.corrupt import CorruptSessionError, session_id_of
    from larik_jupyter.session.entry import Entry
    from larik_jupyter.session.entry_list import EntryList
    from larik_jupyter.session.export import (
        code_fence,
        export_markdown,
        image_markdown,
        render_markdown,
    )
    from larik_jupyter.session.numbers import (
        Claim,
        TurnNumbers,
        trace_entries,
    )
    from larik_jupyter.session.numbers import (
        footer as numbers_footer,
    )
    from larik_jupyter.session.numbers import (
        mark as mark_numbers,
    )
    from larik_jupyter.session.numbers import (
        spread as spread_numbers,
    )
    from larik_jupyter.session.page_index import page_entries
    from larik_jupyter.session.plan import Todo, checklist, progress
    from larik_jupyter.session.reader import load_entries
    from larik_jupyter.session.receipts import Receipt, receipt_text, receipts_lines
    from larik_jupyter.session.regular import UnreadableFileError
    from larik_jupyter.session.state import replay as replay_state
    from larik_jupyter.session.state import undone_notice
    from larik_jupyter.session.store import SessionLockedError
    from larik_jupyter.session.summary import summary as session_summary
    from larik_jupyter.session.variable_changes import VariableChange, changes_of, changes_text
    from larik_jupyter.textdiff import detail_html, diff_html, looks_like_diff
    from larik_jupyter.tools.base import STOP_GRACE_SECONDS
    from larik_jupyter.tools.calls import (
        cells_named,
        numbered_calls,
        plan_set,
        skill_loaded,
        summarize_call,
    )
    from larik_jupyter.tools.check import CheckReport
    from larik_jupyter.tools.env import Env, InlineRunner
    from larik_jupyter.tools.envelope import new_nonce
    from larik_jupyter.tools.envelope import wrap as wrap_in_envelope
    from larik_jupyter.tools.files import is_binary
    from larik_jupyter.tools.host import Displayed, KernelHost, OpenNotebooks
    from larik_jupyter.tools.images import InvalidImage, image_block
    from larik_jupyter.tools.kernel import (
        DID_NOT_EXIST,
        CodeStop,
        image_of,
        is_figure,
        kernel_snapshots,
        stoppable,
    )
    from larik_jupyter.tools.kernel import (
        describe as describe_value,
    )
    from larik_jupyter.tools.notebook import (
        JUPYTER_COLLABORATION,
        SERVER_DOCUMENTS,
        CellRun,
        cell_tag,
        under_server_documents,
    )
    from larik_jupyter.tools.output_text import IMAGE_TYPES, strip_ansi
    from larik_jupyter.tools.page_cells import (
        CachedCells,
        CellChanged,
        NotLanded,
        PageCells,
        Refused,
    )
    from larik_jupyter.tools.registry import builtin_tool, builtin_writes, kernel_tools
    from larik_jupyter.typescript import (
        declarations as typescript_declarations,
    )
    from larik_jupyter.typescript import (
        module as typescript_module,
    )

__getattr__ = lazy_names(__name__, type_checking_names(__file__))
