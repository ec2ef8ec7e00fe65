"""The ADR reader of ``mneia.capture.adr``, on the 41 Compliant Kubernetes records in
``benchmarks/data`` (written out as the MADR files they came from) and on small synthetic
directories for every form the data does not show. Pure: no database, no server."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mneia.capture import adr
from mneia.capture.record import Capture, Claim, NotASource, Origin

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "compliantkubernetes-adr" / "adrs.json"
# The supersessions SOURCE.md lists, older → newer.
CHAINS = [(3, 19), (11, 46), (12, 17), (16, 40), (23, 56), (8, 36)]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def midnight(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def by_number(capture: Capture) -> dict[int, Claim]:
    return {int(re.match(r"adr:(\d+)", c.key)[1]): c for c in capture.claims}  # type: ignore[index]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def nygard(
    number: int, title: str, status: str, *, date: str | None = "2021-03-04", decision: str = ""
) -> str:
    dated = f"Date: {date}\n\n" if date else ""
    return (
        f"# {number}. {title}\n\n{dated}## Status\n\n{status}\n\n"
        f"## Context\n\nWe need {title.lower()}. It matters.\n\n"
        f"## Decision\n\n{decision or f'We will {title.lower()}.'}\n\n## Consequences\n\nSome.\n"
    )


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return list(json.loads(DATA.read_text(encoding="utf-8"))["records"])


@pytest.fixture
def ck(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    """The records as the repository writes them: MADR 2, ``* Status:`` lines, linked successors."""
    names = {r["id"]: f"{r['id'][4:]}-{slug(r['title'])}.md" for r in records}
    for r in records:
        status = re.sub(r"ADR-(\d{4})", lambda m: f"[ADR-{m[1]}]({names['ADR-' + m[1]]})", r["status"])
        write(
            tmp_path,
            names[r["id"]],
            f"# {r['title']}\n\n* Status: {status}\n* Date: {r['date']}\n\n"
            f"## Context and Problem Statement\n\n{r['context']}\n\n"
            f"## Decision Drivers\n\n* cost\n\n## Considered Options\n\n* this\n* that\n\n"
            f"## Decision Outcome\n\n{r['decision']}\n\n### Positive Consequences\n\n* good\n",
        )
    write(tmp_path, "README.md", "# Architectural Decision Log\n\n* [ADR-0000](0000-x.md)\n")
    write(tmp_path, "template.md", "# [short title of solved problem and solution]\n\n* Status: proposed\n")
    return tmp_path


# --- the real records ---------------------------------------------------------------------------


def test_real_records_one_decision_each(ck: Path, records: list[dict[str, Any]]) -> None:
    capture = adr.read(ck, shown="docs/adr")
    assert capture.source == "docs/adr" and capture.origin is Origin.DOCUMENT and capture.session is None
    assert len(capture.claims) == len(records) == 41
    assert {c.kind for c in capture.claims} == {"DECISION"}
    assert capture.skipped == {"template or index": 2}
    assert len({c.key for c in capture.claims}) == 41


def test_real_record_key_statement_date(ck: Path) -> None:
    claim = by_number(adr.read(ck))[5]
    assert claim.key == "adr:0005-use-individual-ssh-keys.md"
    assert claim.statement == (
        "Use Individual SSH Keys: We will manage SSH keys via an Ansible role, since it allows "
        "rotating/adding/deleting keys without rebooting nodes. The comment of the key needs to "
        "clearly identify the owner."
    )
    assert claim.details is not None and claim.details.startswith(
        "Currently, we create per-cluster SSH keypairs"
    )
    assert claim.basis == "ADR 0005-use-individual-ssh-keys.md"  # no git repository here
    assert claim.said_at == claim.valid_from == midnight("2021-01-28")
    assert claim.valid_to is None and claim.retired is None and claim.supersedes is None


def test_real_record_madr_outcome_and_status_mapping(ck: Path) -> None:
    claims = by_number(adr.read(ck))
    assert claims[0].statement.startswith(
        'Use Markdown Architectural Decision Records: Chosen option: "MADR 2.1.2"'
    )
    assert claims[7].statement.startswith("Proposed: Make Monitoring Forwarders Storage Independent: ")
    assert claims[10].statement.startswith("Proposed: Run managed services in Workload Cluster")
    assert not claims[9].statement.startswith("Proposed")
    assert all(c.retired is None for c in claims.values())  # accepted, proposed, superseded: none retired


def test_real_supersession_chains(ck: Path, records: list[dict[str, Any]]) -> None:
    capture = adr.read(ck)
    claims = by_number(capture)
    context = {int(r["id"][4:]): r["context"] for r in records}
    order = [c.key for c in capture.claims]
    for old, new in CHAINS:
        assert claims[new].supersedes == claims[old].key
        assert claims[new].reason is not None and context[new].startswith(claims[new].reason)
        assert claims[old].valid_to == claims[new].valid_from
        assert claims[old].retired is None  # the uploader marks it SUPERSEDED
        assert order.index(claims[old].key) < order.index(claims[new].key)
    assert {n for n, c in claims.items() if c.supersedes} == {new for _, new in CHAINS}
    assert (
        claims[19].reason
        == "Currently, the service cluster exposes several end-points for workload clusters,"
        " among them InfluxDB, for pushing metrics."
    )


def test_real_records_in_number_order(ck: Path) -> None:
    numbers = list(by_number(adr.read(ck)))
    assert numbers == sorted(numbers)


def test_risk_and_password_words_are_plain_text(tmp_path: Path) -> None:
    # Nothing of the secret rules lives here: words that sound sensitive are kept as written.
    write(tmp_path, "0001-risk.md", nygard(1, "Use a risk-based password policy", "Accepted"))
    claim = adr.read(tmp_path).claims[0]
    assert claim.statement == "Use a risk-based password policy: We will use a risk-based password policy."


# --- forms --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title", ["# 7. Use PostgreSQL", "# ADR-007: Use PostgreSQL", "# ADR 7 - Use PostgreSQL"]
)
@pytest.mark.parametrize(
    "dated", ["Date: 2021-03-04", "* Date: 2021-03-04", "- Date: 2021-03-04", "**Date:** 2021-03-04"]
)
def test_nygard_title_and_date_forms(tmp_path: Path, title: str, dated: str) -> None:
    write(
        tmp_path,
        "0007-use-postgresql.md",
        f"{title}\n\n{dated}\n\n## Status\n\nAccepted\n\n## Context\n\nTenants must be isolated.\n\n"
        "## Decision\n\nWe will use PostgreSQL 15 with row-level security.\n\n"
        "More detail in a second paragraph.\n\n## Consequences\n\nOps learns RLS.\n",
    )
    claim = adr.read(tmp_path).claims[0]
    assert claim.key == "adr:0007-use-postgresql.md"
    assert claim.statement == "Use PostgreSQL: We will use PostgreSQL 15 with row-level security."
    assert claim.details == "Tenants must be isolated."
    assert claim.said_at == claim.valid_from == midnight("2021-03-04")


def test_number_from_title_when_the_file_has_none(tmp_path: Path) -> None:
    record = adr.read_file(write(tmp_path, "use-postgres.md", nygard(7, "Use PostgreSQL", "Accepted")))
    assert (
        record.number == 7 and record.title == "Use PostgreSQL" and record.standing is adr.Standing.ACCEPTED
    )


@pytest.mark.parametrize(
    ("status", "retired", "proposed"),
    [
        ("Accepted", None, False),
        ("Approved", None, False),
        ("Adopted", None, False),
        ("Proposed", None, True),
        ("Draft", None, True),
        ("Accepted, pending implementation", None, False),
        ("Rejected", "rejected in ADR 0003-x.md", False),
        ("Declined after review", "rejected in ADR 0003-x.md", False),
        ("Deprecated", "deprecated in ADR 0003-x.md", False),
        ("Something else", None, False),
    ],
)
def test_status_mapping(tmp_path: Path, status: str, retired: str | None, proposed: bool) -> None:
    write(tmp_path, "0003-x.md", nygard(3, "Use X", status))
    claim = adr.read(tmp_path).claims[0]
    assert claim.retired == retired
    assert claim.statement.startswith("Proposed: Use X: ") is proposed
    assert claim.kind == "DECISION"


def test_no_status_section_reads_as_accepted(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", "# 1. Use X\n\n## Decision\n\nWe use X.\n")
    claim = adr.read(tmp_path).claims[0]
    assert claim.statement == "Use X: We use X." and claim.retired is None


def test_no_date_is_none_never_the_mtime(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Accepted", date=None))
    write(tmp_path, "0002-y.md", nygard(2, "Use Y", "Superseded by ADR-3", date=None))
    write(tmp_path, "0003-z.md", nygard(3, "Use Z", "Accepted"))
    claims = by_number(adr.read(tmp_path))
    assert claims[1].said_at is None and claims[1].valid_from is None
    assert claims[2].valid_to is None  # the newer has a date, the older none: no window is made up
    assert claims[3].supersedes == "adr:0002-y.md"


def test_madr_front_matter(tmp_path: Path) -> None:
    write(
        tmp_path,
        "0004-use-markdown.md",
        "---\nstatus: accepted\ndate: '2022-05-01'\ndeciders:\n  - Ann\n  - Bo\nconsulted: [Cy, Di]\n"
        "informed: Everyone\n---\n# Use Markdown\n\n## Context and Problem Statement\n\n"
        "Which format? We need one.\n\n## Considered Options\n\n* MADR\n* Plain\n\n## Decision Outcome\n\n"
        'Chosen option: "MADR", because it is lean.\n\n### Consequences\n\n* Good, because tooling.\n',
    )
    claim = adr.read(tmp_path).claims[0]
    assert claim.statement == 'Use Markdown: Chosen option: "MADR", because it is lean.'
    assert claim.details == "Which format? We need one."
    assert claim.basis == "ADR 0004-use-markdown.md (deciders: Ann, Bo)"
    assert claim.said_at == midnight("2022-05-01")
    record = adr.read_file(tmp_path / "0004-use-markdown.md")
    assert record.consulted == ("Cy", "Di") and record.informed == ("Everyone",)


def test_madr_deciders_as_a_string(tmp_path: Path) -> None:
    write(
        tmp_path,
        "0001-x.md",
        "---\nstatus: proposed\ndeciders: Ann, Bo\n---\n# Use X\n\n## Decision Outcome\n\nX.\n",
    )
    claim = adr.read(tmp_path).claims[0]
    assert claim.basis == "ADR 0001-x.md (deciders: Ann, Bo)" and claim.statement == "Proposed: Use X: X."


def test_placeholder_date_is_none(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", "---\nstatus: accepted\ndate: {YYYY-MM-DD when decided}\n---\n# Use X\n")
    assert adr.read(tmp_path).claims[0].said_at is None


def test_statement_clipped_at_a_word(tmp_path: Path) -> None:
    long = " ".join(f"word{i}" for i in range(200)) + "."
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Accepted", decision=long))
    claim = adr.read(tmp_path).claims[0]
    assert len(claim.statement) <= adr.STATEMENT_MAX and claim.statement.endswith("…")
    assert f"Use X: {long}".startswith(claim.statement[:-1] + " ")


def test_subfolders_keyed_by_relative_posix_path(tmp_path: Path) -> None:
    write(tmp_path, "backend/0001-x.md", nygard(1, "Use X", "Superseded by ADR-2"))
    write(tmp_path, "backend/0002-y.md", nygard(2, "Use Y", "Accepted"))
    write(tmp_path, "frontend/0001-a.md", nygard(1, "Use A", "Accepted"))
    write(tmp_path, "frontend/0002-b.md", nygard(2, "Use B", "Accepted"))
    claims = {c.key: c for c in adr.read(tmp_path).claims}
    assert claims["adr:backend/0002-y.md"].supersedes == "adr:backend/0001-x.md"
    assert claims["adr:frontend/0002-b.md"].supersedes is None


# --- supersession -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "older",
    [
        nygard(5, "Use X", "Superseded by ADR-12"),
        nygard(5, "Use X", "Superseded by ADR-0012"),
        nygard(5, "Use X", "superseded by [ADR-0012](0012-use-y.md)"),
        nygard(5, "Use X", "Superseded by [12. Use Y](0012-use-y.md)"),
        nygard(5, "Use X", "Superseded by [the newer one](0012-use-y.md)"),
        nygard(5, "Use X", "Accepted\n\nsuperseded-by: 0012"),
        "---\nstatus: superseded by ADR-0012\ndate: 2021-03-04\n---\n# Use X\n\n## Decision Outcome\n\nX.\n",
        "---\nstatus: superseded by [ADR-0012](0012-use-y.md)\n---\n# Use X\n",
        "---\nstatus: deprecated\nsuperseded-by: 12\n---\n# Use X\n",
        "# Use X\n\n* Status: superseded by [ADR-0012](0012-use-y.md)\n* Date: 2021-03-04\n",
    ],
)
def test_superseded_by_spellings(tmp_path: Path, older: str) -> None:
    write(tmp_path, "0005-use-x.md", older)
    write(tmp_path, "0012-use-y.md", nygard(12, "Use Y", "Accepted", date="2022-01-02"))
    capture = adr.read(tmp_path)
    claims = by_number(capture)
    assert [c.key for c in capture.claims] == ["adr:0005-use-x.md", "adr:0012-use-y.md"]
    assert claims[12].supersedes == "adr:0005-use-x.md"
    assert claims[12].reason == "We need use y."
    assert claims[5].retired is None
    assert claims[5].valid_to == (midnight("2022-01-02") if claims[5].valid_from else None)
    assert not capture.skipped


@pytest.mark.parametrize("said", ["Supersedes ADR-5", "Accepted\n\nSupersedes [5. Use X](0005-use-x.md)"])
def test_supersedes_in_the_newer(tmp_path: Path, said: str) -> None:
    write(tmp_path, "0005-use-x.md", nygard(5, "Use X", "Accepted"))
    write(tmp_path, "0012-use-y.md", nygard(12, "Use Y", said))
    claims = by_number(adr.read(tmp_path))
    assert claims[12].supersedes == "adr:0005-use-x.md" and claims[12].statement.startswith("Use Y: ")


def test_both_directions_make_one_chain(tmp_path: Path) -> None:
    write(tmp_path, "0005-use-x.md", nygard(5, "Use X", "Superseded by [ADR-12](0012-use-y.md)"))
    write(tmp_path, "0012-use-y.md", nygard(12, "Use Y", "Accepted\n\nSupersedes [ADR-5](0005-use-x.md)"))
    capture = adr.read(tmp_path)
    assert by_number(capture)[12].supersedes == "adr:0005-use-x.md" and not capture.skipped


def test_chain_ordered_before_numbers(tmp_path: Path) -> None:
    # 9 supersedes 3 which supersedes... nothing; 2 supersedes 8: 8 must come before 2.
    write(tmp_path, "0002-b.md", nygard(2, "B", "Supersedes ADR-8"))
    write(tmp_path, "0003-c.md", nygard(3, "C", "Superseded by ADR-9"))
    write(tmp_path, "0008-h.md", nygard(8, "H", "Accepted"))
    write(tmp_path, "0009-i.md", nygard(9, "I", "Accepted"))
    assert [c.key for c in adr.read(tmp_path).claims] == [
        "adr:0003-c.md",
        "adr:0008-h.md",
        "adr:0002-b.md",
        "adr:0009-i.md",
    ]


def test_superseded_by_an_adr_not_found(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Superseded by ADR-99"))
    capture = adr.read(tmp_path)
    claim = capture.claims[0]
    assert claim.key == "adr:0001-x.md"  # kept, retired: its own text says it no longer holds
    assert (
        claim.retired is not None and "ADR-99" in claim.retired and "not among the ADRs read" in claim.retired
    )
    assert capture.skipped["superseded by an ADR not found"] == 1


@pytest.mark.parametrize("size", [1, 2, 3])
def test_supersession_cycle_broken(tmp_path: Path, size: int) -> None:
    for n in range(1, size + 1):
        write(tmp_path, f"000{n}-x{n}.md", nygard(n, f"X{n}", f"Superseded by ADR-{n % size + 1}"))
    capture = adr.read(tmp_path)
    assert len(capture.claims) == size
    assert capture.skipped["supersession cycle (broken)"] == 1
    assert sum(c.supersedes is not None for c in capture.claims) == size - 1


def test_rejected_never_chained(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Accepted"))
    write(tmp_path, "0002-y.md", nygard(2, "Use Y", "Rejected\n\nSupersedes ADR-1"))
    capture = adr.read(tmp_path)
    claims = by_number(capture)
    assert claims[2].supersedes is None and claims[2].retired == "rejected in ADR 0002-y.md"
    assert claims[1].retired is None and claims[1].valid_to is None
    assert capture.skipped["supersession by a rejected ADR (ignored)"] == 1


def test_a_proposal_does_not_retire_what_it_would_replace(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Accepted"))
    write(tmp_path, "0002-y.md", nygard(2, "Use Y", "Proposed\n\nSupersedes ADR-1"))
    capture = adr.read(tmp_path)
    assert by_number(capture)[2].supersedes is None
    assert capture.skipped["supersession only proposed (not applied)"] == 1


def test_one_adr_superseding_two(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Superseded by ADR-3"))
    write(tmp_path, "0002-y.md", nygard(2, "Use Y", "Superseded by ADR-3"))
    write(tmp_path, "0003-z.md", nygard(3, "Use Z", "Accepted"))
    capture = adr.read(tmp_path)
    claims = by_number(capture)
    assert claims[3].supersedes == "adr:0002-y.md"  # the nearest
    assert claims[1].retired == "superseded by ADR 0003-z.md"
    assert capture.skipped["supersedes more than one ADR (the others retired)"] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Accepted", "Proposed", "Rejected", "Deprecated"]),
            st.lists(st.integers(1, 9), max_size=2),
        ),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.tuples(st.integers(1, 8), st.integers(1, 9)), max_size=4),
)
def test_any_supersession_graph_gives_a_chain(
    tmp_path_factory: pytest.TempPathFactory, adrs: list[tuple[str, list[int]]], newer: list[tuple[int, int]]
) -> None:
    """Whatever the records claim (cycles, self-references, absent numbers), every ADR gives one claim,
    each claim replaces at most one and is replaced at most once, and always after it."""
    directory = tmp_path_factory.mktemp("graph")
    supersedes = {n: [o for m, o in newer if m == n] for n in range(1, len(adrs) + 1)}
    for n, (status, successors) in enumerate(adrs, start=1):
        told = "\n\n".join(
            [
                status,
                *(f"Superseded by ADR-{s}" for s in successors),
                *(f"Supersedes ADR-{o}" for o in supersedes[n]),
            ]
        )
        write(directory, f"{n:04d}-x.md", nygard(n, f"X{n}", told))
    capture = adr.read(directory)
    keys = [c.key for c in capture.claims]
    assert sorted(keys) == sorted(f"adr:{n:04d}-x.md" for n in range(1, len(adrs) + 1))
    replaced = [c.supersedes for c in capture.claims if c.supersedes]
    assert len(replaced) == len(set(replaced))
    for i, claim in enumerate(capture.claims):
        if claim.supersedes:
            assert claim.supersedes in keys[:i]
            assert claim.supersedes != claim.key
            assert next(c for c in capture.claims if c.key == claim.supersedes).retired is None


# --- git ----------------------------------------------------------------------------------------


def git(directory: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "-C", str(directory), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_commit_in_basis(tmp_path: Path) -> None:
    directory = tmp_path / "docs" / "adr"
    write(directory, "0001-x.md", nygard(1, "Use X", "Accepted"))
    write(directory, "0002-y.md", nygard(2, "Use Y", "Accepted"))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "first")
    first = git(tmp_path, "rev-parse", "HEAD")
    write(directory, "0002-y.md", nygard(2, "Use Y", "Deprecated"))
    git(tmp_path, "commit", "-qam", "second")
    second = git(tmp_path, "rev-parse", "HEAD")
    write(directory, "0003-z.md", nygard(3, "Use Z", "Accepted"))  # untracked
    claims = by_number(adr.read(directory))
    assert claims[1].basis == f"ADR 0001-x.md at git commit {first}"
    assert claims[2].basis == f"ADR 0002-y.md at git commit {second}"
    assert claims[3].basis == "ADR 0003-z.md"
    write(directory, "0001-x.md", nygard(1, "Use X", "Rejected"))  # changed since its commit
    assert by_number(adr.read(directory))[1].basis == "ADR 0001-x.md"


# --- not ADRs -----------------------------------------------------------------------------------


def test_not_an_adr_directory(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# Project\n\nHello.\n")
    write(tmp_path, "guide.md", "# Guide\n\nSome prose.\n\n## Install\n\npip install.\n")
    write(tmp_path, "notes.md", "no title at all\n")
    with pytest.raises(NotASource, match="no ADR found"):
        adr.read(tmp_path)
    with pytest.raises(NotASource):
        adr.read(tmp_path / "guide.md")
    with pytest.raises(NotASource, match="no title"):
        adr.read_file(tmp_path / "notes.md")


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(NotASource, match="no ADR found"):
        adr.read(tmp_path)


def test_file_without_title_skipped_and_counted(tmp_path: Path) -> None:
    write(tmp_path, "0001-x.md", nygard(1, "Use X", "Accepted"))
    write(tmp_path, "0002-y.md", "Status: accepted\n\nNo heading here.\n")
    write(tmp_path, "adr-template.md", nygard(0, "Title", "Proposed"))
    write(tmp_path, "index.md", nygard(0, "Index", "Accepted"))
    write(tmp_path, ".drafts/0003-z.md", nygard(3, "Use Z", "Accepted"))
    capture = adr.read(tmp_path)
    assert [c.key for c in capture.claims] == ["adr:0001-x.md"]
    assert capture.skipped == {"no title": 1, "template or index": 2}
