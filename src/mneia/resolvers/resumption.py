"""resume: the newest handoff the caller can see and a slice for the new task, under one budget (R12).

The handoff comes first and whole: its tokens, and the heading that names
the new task, count against the budget, and the slice is rehydrated with
what is left (``resolvers.rehydration.slice_for``, the same code as
``rehydrate``; 0 when the handoff took it all), less what the handoff
shows already: the items asserted in its session are no scored or filled entries and
its replacements no notes of the slice, so no token is spent twice. The
slice's guarantee holds whatever is left (R11.1): every active load-bearing
constraint the caller can see is in it, and ``overBudget`` says when the
handoff and those alone exceed the budget. Without a handoff, the answer is exactly ``rehydrate``'s
slice for the task and budget.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from mneia.rehydration import handoff_text, tokens
from mneia.resolvers.handoff import build
from mneia.resolvers.inputs import parse_id, required_text
from mneia.resolvers.rehydration import slice_for, token_budget, visible_project
from mneia.resolvers.request.context import Info
from mneia.schema.handoff import ResumeInput, Resumption
from mneia.storage import handoff


async def resume(
    info: Info,
    input: Annotated[
        ResumeInput, strawberry.argument(description="The project, the new task and the token budget.")
    ],
) -> Resumption:
    """The newest handoff you can see, then a slice for the task in what it left of the budget."""
    context = info.context
    project_key = parse_id(input.project_id, "input.projectId")
    task = required_text(input.task, "input.task")
    budget = token_budget(input.token_budget)
    await visible_project(info, project_key, input.project_id)

    found = await handoff.latest(context.tx, project_key)
    if found is None:
        alone = await slice_for(info, project_key, task, budget)
        return Resumption(
            handoff=None,
            slice=alone,
            rendered=alone.rendered,
            token_budget=budget,
            tokens_used=alone.tokens_used,
            over_budget=alone.over_budget,
            encoding=tokens.ENCODING,
        )
    left = await build(context.view(), found)
    heading = handoff_text.for_task(task)
    spent = left.tokens + tokens.count(heading)
    rest = await slice_for(info, project_key, task, max(0, budget - spent), shown=left.shown)
    used = spent + rest.tokens_used
    return Resumption(
        handoff=left,
        slice=rest,
        rendered=left.rendered + heading + rest.rendered,
        token_budget=budget,
        tokens_used=used,
        over_budget=used > budget,
        encoding=tokens.ENCODING,
    )
