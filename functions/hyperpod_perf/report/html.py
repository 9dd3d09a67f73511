"""The HTML report: one self-contained file an operator opens on a laptop or a phone.

No external assets and no JavaScript needed to read it (a few lines of inline JS only make the
fleet table sortable). Verdict first, then the fleet at a glance, then the evidence. Severity is
always shown as an icon *and* a word, never by colour alone. Every piece of text that comes from
a node, a log or an API goes through `html.escape`, so a hostile host name renders as text.

Size is bounded for large fleets: per-node detail lists the worst nodes (the grouped concerns
still name every node), and GPU pictures show the outliers plus the fleet's distribution.
"""

from __future__ import annotations

import re
from html import escape as e
from typing import Any

from hyperpod_perf.domain import escaping
from hyperpod_perf.domain.findings import TIER_MEANINGS, Finding, Severity, Tier
from hyperpod_perf.domain.names import NodeNames
from hyperpod_perf.domain.report import Report
from hyperpod_perf.report.alarm_answer import html_section as alarm_html
from hyperpod_perf.report.commands import command_lines, plans_for
from hyperpod_perf.report.history import describe_drift
from hyperpod_perf.report.html_figures import (
    filesystems_section,
    gpus_section,
    heatmap_svg,
    metrics_section,
    nccl_section,
)
from hyperpod_perf.report.verdict import (
    FAMILIES,
    ICON,
    TIER_WORD,
    WORD,
    FindingGroup,
    headline_word,
    overall_severity,
)
from hyperpod_perf.report.view import (
    NODE_MAP_NAMED,
    FleetRow,
    ReportView,
    build_view,
    collection_failed,
    dashboard_link,
    evidence_text,
    follow_ups,
    history_lists,
    node_groups,
    report_html_location,
    run_facts,
    worst_finding,
)
from hyperpod_perf.rules.thresholds import DEFAULT_THRESHOLDS, Thresholds

#: Per-node detail is written for this many nodes (worst first); the rest are in the groups.
DETAIL_NODE_LIMIT = 100
#: History lists shown in full up to this many items each.
HISTORY_LIMIT = 50

_CSS = """
:root{--c:#8c1d18;--cb:#fde2e1;--i:#0b4a8b;--ib:#e3eefc;--o:#1e5e24;--ob:#e6f4ea;--n:#555;--nb:#f0f0f0}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:12px 16px;color:#1b1b1b;background:#fff;overflow-wrap:anywhere}
h1{font-size:1.3em;margin:.1em 0}h2{font-size:1.2em;margin:1.4em 0 .5em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:1em 0 .3em}
.verdict{font-size:1.2em;font-weight:600;padding:8px 12px;margin:.4em 0;border-radius:6px;
border-left:6px solid}
.verdict.s2{background:var(--cb);color:var(--c)}.verdict.s1{background:var(--ib);color:var(--i)}
.verdict.s0{background:var(--ob);color:var(--o)}
.meta{color:#444;font-size:.85em;margin:.3em 0}
nav{font-size:.85em}nav a{margin-right:.8em;white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.9em}
th,td{border:1px solid #d5d5d5;padding:3px 6px;text-align:left;vertical-align:top}
thead th{background:#f6f6f6;position:sticky;top:0}
th.sortable{cursor:pointer}
td.s2,.sev.s2{background:var(--cb);color:var(--c);font-weight:600}
td.s1,.sev.s1{background:var(--ib);color:var(--i)}
td.s0,.sev.s0{background:var(--ob);color:var(--o)}
td.sn{background:var(--nb);color:var(--n)}
.sev{padding:0 4px;border-radius:3px;white-space:nowrap}
.badge{border:1px solid currentColor;border-radius:9px;padding:0 6px;font-size:.8em;white-space:nowrap}
.badge.new{color:var(--c)}.badge.old{color:var(--n)}
.overview{display:grid;grid-template-columns:minmax(0,1fr);gap:8px 20px;align-items:start}
@media (min-width:900px){.overview.pairs{grid-template-columns:minmax(0,3fr) minmax(0,2fr)}}
.overview h2{margin-top:.3em}
.grp{margin:.2em 0 .5em}.grp h3{font-size:.85em;font-weight:600;margin:.2em 0;color:#333}
.cells{display:flex;flex-wrap:wrap;gap:2px}
.cell{display:inline-flex;align-items:center;justify-content:center;width:20px;height:20px;font-size:12px;
line-height:1;text-decoration:none;border-radius:3px;border:1px solid #9bb59d;background:var(--ob);
color:var(--o)}
.dense .cell{width:14px;height:14px;font-size:9px;border-radius:2px}
.roomy .cell{width:26px;height:26px;font-size:15px}
.cell.s2{background:#b3261e;border-color:#8c1d18;color:#fff;font-weight:700}
.cell.s1{background:var(--ib);border-color:#8fb0d8;color:var(--i)}
.cell.sf{background:#444;border-color:#222;color:#fff}
.cell:focus,.cell:hover{outline:2px solid #000;outline-offset:1px}
.legend{font-size:.82em;color:#444;margin:.2em 0}
ul.bad{list-style:none;padding:0;margin:.4em 0;font-size:.92em}ul.bad li{margin:.15em 0}
ul.bad a{font-weight:600}
.healthy{margin:.3em 0;font-size:.92em}
details>summary{cursor:pointer}
.pairmap svg{max-width:100%;max-height:560px;width:auto;height:auto;display:block}
ol.groups{padding-left:1.4em}ol.groups li{margin:.5em 0}
h3.tier{margin:.5em 0 .1em;font-size:1em}h3.t0{color:#a40000}
ul.plans pre{overflow-x:auto;background:#f6f6f6;padding:.5em;font-size:.85em}
.next{display:block;color:#333}
details.node{border:1px solid #ddd;border-radius:6px;padding:4px 10px;margin:6px 0;break-inside:avoid}
details.node>summary{font-weight:600}
ul.findings{padding-left:1.1em}ul.findings>li{margin:.4em 0}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 10px;margin:.2em 0 .2em .5em;
font-size:.9em}
dt{color:#555}dd{margin:0;overflow-wrap:anywhere}
code{font-size:.92em;overflow-wrap:anywhere;background:#f3f3f3;border-radius:3px;padding:0 3px}
.ok-list{color:#444;font-size:.88em}
svg.chart{width:100%;height:auto;display:block}
figure.fs{margin:0;max-width:560px}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:10px}
.tiles.dist{grid-template-columns:repeat(auto-fill,minmax(300px,1fr))}
.tiles figure{margin:0;border:1px solid #e3e3e3;border-radius:4px;padding:4px;max-width:420px}
figcaption{font-size:.85em;overflow-wrap:anywhere}
.note{color:#555;font-size:.9em}
@media (max-width:640px){body{padding:8px;font-size:14px}.opt{display:none}
 #fleet-table .w{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
 .verdict{font-size:1.05em}dl{grid-template-columns:minmax(0,1fr)}th,td{padding:2px 4px}
 .tiles,.tiles.dist{grid-template-columns:minmax(0,1fr)}}
@media print{nav,script{display:none}body{max-width:none;font-size:11px}
 .scroll{overflow:visible}thead th{position:static}h2{break-after:avoid}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"""

_JS = """
(function(){document.querySelectorAll('table.sortable').forEach(function(t){
var hs=t.tHead.rows[0].cells;Array.prototype.forEach.call(hs,function(th,i){
th.classList.add('sortable');th.tabIndex=0;th.title='Sort by this column';
function go(){var b=t.tBodies[0],rs=Array.prototype.slice.call(b.rows),
d=th.getAttribute('aria-sort')==='descending'?1:-1;
Array.prototype.forEach.call(hs,function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',d>0?'ascending':'descending');
rs.sort(function(x,y){var p=x.cells[i],q=y.cells[i],a=p.dataset.r,c=q.dataset.r;
if(a!==undefined&&c!==undefined){return d*(a-c);}return d*p.textContent.localeCompare(q.textContent);});
rs.forEach(function(r){b.appendChild(r);});}
th.addEventListener('click',go);th.addEventListener('keydown',function(ev){if(ev.key==='Enter'){go();}});});});
function reveal(){var el=location.hash&&document.getElementById(location.hash.slice(1));
for(var p=el;p;p=p.parentElement){if(p.tagName==='DETAILS'){p.open=true;}}if(el){el.scrollIntoView();}}
window.addEventListener('hashchange',reveal);reveal();})();
"""

#: A `command` in backticks, or a bare AWS CLI command, inside prose from a rule.
_BACKTICKED = re.compile(r"`([^`\n]+)`")
#: The operation is hyphenated (`update-file-system`) or an s3 verb, so plain English such as
#: "aws credentials are missing" is not mistaken for a command.
_AWS_COMMAND = re.compile(
    r"\baws [a-z0-9-]+ (?:[a-z0-9]+-[a-z0-9-]+|cp|ls|mv|rm|sync)\b(?: [^;()\n]*[^;()\n.,:\s])?"
)
#: Above this many nodes the map draws smaller cells.
DENSE_MAP = 200
#: Up to this many nodes the map draws bigger cells (easy to tap on a phone).
ROOMY_MAP = 64


def prose(text: str) -> str:
    """Escaped text with its commands as <code>: `backticked` spans and bare `aws ...` commands.

    Rules write commands in backticks (Markdown and Slack show them as code); the HTML used to
    print the backticks themselves. Everything is escaped, inside and outside the code spans.
    """
    out: list[str] = []
    pos = 0
    for m in _BACKTICKED.finditer(text):
        out.append(_bare_commands(text[pos : m.start()]))
        out.append(f"<code>{e(m.group(1))}</code>")
        pos = m.end()
    out.append(_bare_commands(text[pos:]))
    return "".join(out)


def _bare_commands(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _AWS_COMMAND.finditer(text):
        out.append(e(text[pos : m.start()]))
        out.append(f"<code>{e(m.group(0))}</code>")
        pos = m.end()
    out.append(e(text[pos:]))
    return "".join(out)


def _sev(severity: Severity | None) -> str:
    if severity is None:
        return '<span class="sev sn">– not checked</span>'
    return f'<span class="sev s{severity.rank}">{ICON[severity]} {WORD[severity]}</span>'


def _badge(status: str | None) -> str:
    if not status:
        return ""
    cls = "new" if status == "new" else "old"
    return f' <span class="badge {cls}">{e(status)}</span>'


def _anchor(index: int) -> str:
    return f"n{index}"


def render_html(report: Report, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    """The page: the verdict and a picture of the cluster first, then what to do, then evidence."""
    view = build_view(report, thresholds)
    detail_rows = [r for r in view.rows if r.concerns or r.infos or collection_failed(r)][:DETAIL_NODE_LIMIT]
    anchors = {r.node: _anchor(i) for i, r in enumerate(detail_rows)}
    worst = overall_severity(report)
    title = f"HyperPod perf — {report.cluster.name} — {view.verdict}"
    lead = headline_word(report) if worst is Severity.CONCERN else WORD[worst].capitalize()
    heatmap = heatmap_svg(report.nccl, thresholds) if report.nccl else None
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        "<header>",
        f"<h1>HyperPod performance report: {e(report.cluster.name)}</h1>",
        f'<p class="verdict s{worst.rank}" id="verdict"><span aria-hidden="true">{ICON[worst]}</span> '
        f"<span>{e(lead)}:</span> {e(view.verdict)}</p>",
        "</header><main>",
        alarm_html(report, thresholds),
        _overview(view, anchors, heatmap),
        _meta(view),
        '<nav aria-label="Sections"><a href="#concerns">What to do</a><a href="#nodes">Nodes</a>'
        '<a href="#fleet">Fleet table</a><a href="#nccl">NCCL</a><a href="#fsx">File systems</a>'
        '<a href="#metrics">Metrics</a>'
        '<a href="#gpu">GPUs</a><a href="#not-checked">Not checked</a><a href="#history">History</a></nav>',
        _concerns(view),
        _cluster(view),
        _nodes(view, detail_rows, anchors),
        _fleet(view, anchors),
        nccl_section(report, heatmap is not None),
        filesystems_section(view),
        metrics_section(report),
        gpus_section(view),
        _not_checked(report),
        _history(view),
        "</main>",
        f'<footer class="note"><p>Report schema {e(report.schema_version)}. Generated by hyperpod-perf; '
        "read-only diagnosis: every remediation above is a command for you to run.</p></footer>",
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return escaping.terminal("\n".join(parts) + "\n")  # a page `cat` to a terminal stays inert too


def _meta(view: ReportView) -> str:
    text = " · ".join(e(fact) for fact in run_facts(view, "node(s) in this report"))
    where = report_html_location(view.report)
    if where:
        text += f"<br>Stored at <code>{e(where)}</code> — fetch: <code>aws s3 cp {e(where)} .</code>"
    dashboard = dashboard_link(view.report)
    if dashboard:
        text += f'<br>The fleet over time: <a id="dashboard" href="{e(dashboard)}">CloudWatch dashboard</a>'
    return f'<p class="meta">{text}</p>'


def _row_link(row: FleetRow, index: int, anchors: dict[str, str]) -> str:
    return f"#{anchors[row.node]}" if row.node in anchors else f"#r{index}"


def _cell(row: FleetRow, href: str) -> str:
    """One node in the map: icon + colour + a title naming the node and its worst check."""
    if collection_failed(row):
        cls, icon, why = "sf", "✖", f"not collected: {row.summary.collection_error if row.summary else ''}"
    else:
        cls, icon = f"s{row.worst.rank}", ICON[row.worst]
        worst = worst_finding(row)
        why = f"{worst.check}: {worst.summary}" if worst else "every check ok"
    label = f"{row.label} — {WORD[row.worst] if cls != 'sf' else 'not collected'}: {why}"
    return f'<a class="cell {cls}" href="{href}" title="{e(label)}" aria-label="{e(label)}">{icon}</a>'


def _overview(view: ReportView, anchors: dict[str, str], heatmap: str | None) -> str:
    """The first screen: every node a cell, grouped by place, the bad ones named beside it."""
    rows = view.rows
    index = {r.node: i for i, r in enumerate(rows)}
    bad = [r for r in rows if r.concerns or collection_failed(r)]
    calm = [r for r in rows if not (r.concerns or collection_failed(r))]
    dense = " dense" if len(rows) > DENSE_MAP else " roomy" if len(rows) <= ROOMY_MAP else ""
    parts = [
        f'<section id="overview" class="overview{" pairs" if heatmap else ""}">',
        f'<div id="node-map" class="map{dense}"><h2>Nodes: {len(bad)} of {len(rows)} with concerns</h2>',
        '<p class="legend">Each cell is a node: ⚠ concern · ℹ note · ✔ ok · ✖ not collected. '
        "Hover or tap for its worst check; select to open its details.</p>",
    ]
    for group in node_groups(view):
        tally = ", ".join(
            f"{n} {icon}"
            for n, icon in (
                (sum(1 for r in group.rows if r.concerns or collection_failed(r)), "⚠"),
                (sum(1 for r in group.rows if not r.concerns and r.infos), "ℹ"),
            )
            if n
        )
        cells = "".join(_cell(r, _row_link(r, index[r.node], anchors)) for r in group.rows)
        tally = f": {tally}" if tally else ""
        parts.append(
            f'<div class="grp"><h3>{e(group.label)} — {len(group.rows)} node(s){tally}</h3>'
            f'<div class="cells">{cells}</div></div>'
        )
    if bad:
        items = []
        for r in bad[:NODE_MAP_NAMED]:
            worst = worst_finding(r)
            what = (
                f"<code>{e(worst.check)}</code> {e(worst.summary)}"
                if worst
                else f"not collected: {e(r.summary.collection_error if r.summary else '')}"
            )
            more = f" (+{len(r.concerns) - 1} more)" if len(r.concerns) > 1 else ""
            icon = "✖" if collection_failed(r) and not r.concerns else "⚠"
            href = _row_link(r, index[r.node], anchors)
            items.append(f'<li>{icon} <a href="{href}">{e(r.label)}</a> {what}{more}</li>')
        if len(bad) > NODE_MAP_NAMED:
            items.append(
                f"<li>… +{len(bad) - NODE_MAP_NAMED} more node(s) with concerns: see "
                '<a href="#concerns">What to do</a></li>'
            )
        parts.append(f'<ul class="bad" id="bad-nodes">{"".join(items)}</ul>')
    if calm:
        noted = sum(1 for r in calm if r.infos)
        names = ", ".join(e(r.label) for r in sorted(calm, key=lambda r: r.node))
        parts.append(
            f'<details class="healthy" id="healthy"><summary>✔ {len(calm)} node(s) without concerns'
            f"{f' ({noted} with notes only)' if noted else ''}</summary>"
            f'<p class="note">{names}</p></details>'
        )
    parts.append("</div>")
    if heatmap:
        parts.append(
            '<div class="pairmap"><h2>NCCL pairs</h2><div class="heatmap" id="nccl-heatmap">'
            f'{heatmap}</div><p class="note"><a href="#nccl">Slowest pairs and suspects</a></p></div>'
        )
    parts.append("</section>")
    return "".join(parts)


def _group_item(group: FindingGroup, view: ReportView) -> str:
    status = view.history.group_status(group.findings)
    parts = [f"<li>{_sev(group.severity)} <code>{e(group.check)}</code> {prose(group.title)}{_badge(status)}"]
    # "Why <tier>" only where it asks for action now: the other tiers' headings say why (page height)
    shown = [(k, v) for k, v in follow_ups(group) if not k.startswith("Why ") or group.tier is Tier.ACT_NOW]
    parts += [f'<span class="next">{label}: {prose(value)}</span>' for label, value in shown]
    parts.append("</li>")
    return "".join(parts)


def _concerns(view: ReportView) -> str:
    """The groups under their tier (act now, fix soon, watch), numbered through, then the commands
    to paste for the act-now nodes."""
    groups = view.notable_groups
    if not groups:
        return '<section id="concerns"><h2>What to do</h2><p>✔ No concerns and nothing to note.</p></section>'
    parts = ['<section id="concerns"><h2>What to do, most urgent first</h2>']
    number = 1
    for tier in Tier:
        members = [g for g in groups if g.tier is tier]
        if not members:
            continue
        parts.append(
            f'<h3 class="tier t{tier.rank}">{e(TIER_WORD[tier])} '
            f'<span class="note">— {e(TIER_MEANINGS[tier])}</span></h3>'
        )
        parts.append(
            f'<ol class="groups" start="{number}">{"".join(_group_item(g, view) for g in members)}</ol>'
        )
        number += len(members)
    parts.append(_commands(view.report))
    parts.append("</section>")
    return "".join(parts)


def _commands(report: Report) -> str:
    """Each act-now node's plan as a block to copy: printed here, never run by this tool."""
    plans = plans_for(report)
    if not plans:
        return ""
    items = "".join(
        f"<li><details><summary><strong>{e(p.label)}</strong>: {e(p.action)} "
        f"({e(', '.join(p.checks))}) — the commands</summary>"
        f"<pre><code>{e(chr(10).join(command_lines(p, indent='')))}</code></pre></details></li>"
        for p in plans[:DETAIL_NODE_LIMIT]
    )
    return (
        '<h3 id="commands" class="tier">Commands to paste for the act-now nodes <span class="note">— '
        "printed, never run by hyperpod-perf; a destructive line says so, after the check that confirms it"
        "</span></h3>"
        f'<ul class="plans">{items}</ul>'
    )


def _fleet(view: ReportView, anchors: dict[str, str]) -> str:
    head = "".join(f'<th scope="col">{e(f)}</th>' for f in FAMILIES)
    rows = []
    for i, row in enumerate(view.rows):
        label = e(row.label)
        if row.node in anchors:
            label = f'<a href="#{anchors[row.node]}">{label}</a>'
        cells = []
        for fam in FAMILIES:
            sev = row.families[fam]
            if sev is None:
                cells.append('<td class="sn" data-r="-1">–</td>')
            else:
                cells.append(
                    f'<td class="s{sev.rank}" data-r="{sev.rank}">{ICON[sev]}'
                    f'<span class="w"> {WORD[sev]}</span></td>'
                )
        rows.append(
            f'<tr id="r{i}"><th scope="row" data-r="{-row.worst.rank}">{label}</th>'
            f'<td class="opt">{e(row.group_and_type)}</td>'
            f'<td class="opt">{e(row.availability_zone)}</td>{"".join(cells)}</tr>'
        )
    return (
        '<section id="fleet"><h2>Fleet table</h2><details id="fleet-details">'
        f"<summary>Every node ({len(view.rows)}) × check family</summary>"
        '<p class="note">Each cell is the worst result of that check family on the node: ⚠ concern, ℹ info, '
        "✔ ok, – not checked. Worst nodes first; click a column heading to sort.</p>"
        '<div class="scroll"><table id="fleet-table" class="sortable"><thead><tr>'
        '<th scope="col">node</th><th scope="col" class="opt">group / type</th>'
        '<th scope="col" class="opt">AZ</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></details></section>"
    )


def _evidence_dl(f: Finding) -> str:
    parts = ["<dl>"]
    if f.evidence:
        parts.append(f"<dt>Evidence</dt><dd><code>{e(evidence_text(f.evidence))}</code></dd>")
    parts += [f"<dt>{label}</dt><dd>{prose(value)}</dd>" for label, value in follow_ups(f)]
    parts.append("</dl>")
    return "".join(parts)


def _finding_li(f: Finding, view: ReportView) -> str:
    return (
        f"<li>{_sev(f.severity)} <code>{e(f.check)}</code> {prose(f.summary)}"
        f"{_badge(view.history.status(f))}{_evidence_dl(f)}</li>"
    )


def _cluster(view: ReportView) -> str:
    items = [f for f in view.cluster_findings if f.severity is not Severity.OK]
    oks = [f for f in view.cluster_findings if f.severity is Severity.OK]
    if not view.cluster_findings:
        return ""
    body = "".join(_finding_li(f, view) for f in items)
    ok = f'<p class="ok-list">✔ Checked OK: {e(", ".join(sorted({f.check for f in oks})))}</p>' if oks else ""
    return f'<section id="cluster"><h2>Cluster-wide</h2><ul class="findings">{body}</ul>{ok}</section>'


def _node_details(row: FleetRow, view: ReportView, anchor: str) -> str:
    s, sub = row.summary, row.placement
    notable = [f for f in row.findings if f.severity is not Severity.OK]
    oks = sorted({f.check for f in row.findings if f.severity is Severity.OK})
    worst = worst_finding(row)
    headline = f" — <code>{e(worst.check)}</code>" if worst else ""
    count = f" ({len(row.concerns)} concerns)" if len(row.concerns) > 1 else ""
    parts = [
        f'<details class="node" id="{anchor}"><summary>{_sev(row.worst)} {e(row.label)}{headline}{count}'
        f"</summary>{f'<p class=note>{e(sub)}</p>' if sub else ''}"
    ]
    if s and s.collection != "collected":
        parts.append(f"<p>Collection: {e(s.collection)} — {e(s.collection_error or 'no reason given')}</p>")
    parts.append(f'<ul class="findings">{"".join(_finding_li(f, view) for f in notable)}</ul>')
    if oks:
        parts.append(f'<p class="ok-list">✔ Checked OK: {e(", ".join(oks))}</p>')
    parts.append("</details>")
    return "".join(parts)


def _nodes(view: ReportView, detail_rows: list[Any], anchors: dict[str, str]) -> str:
    parts = ['<section id="nodes"><h2>Per-node detail</h2>']
    if not detail_rows:
        parts.append("<p>✔ Every node passed every check it was given.</p>")
    bad = [r for r in detail_rows if r.concerns or collection_failed(r)]
    noted = [r for r in detail_rows if r not in bad]
    parts += [_node_details(r, view, anchors[r.node]) for r in bad]
    if noted:
        parts.append(
            f'<details class="noted"><summary>ℹ {len(noted)} node(s) with notes only</summary>'
            + "".join(_node_details(r, view, anchors[r.node]) for r in noted)
            + "</details>"
        )
    remaining = sum(1 for r in view.rows if r.concerns or r.infos or collection_failed(r)) - len(detail_rows)
    if remaining > 0:
        parts.append(
            f'<p class="note">+{remaining} more node(s) with findings are not detailed here to keep the page '
            "small; the grouped concerns above name them and the JSON report holds every finding.</p>"
        )
    clean = sum(1 for r in view.rows if not (r.concerns or r.infos or collection_failed(r)))
    if clean and detail_rows:
        parts.append(f'<p class="note">✔ {clean} node(s) passed every check they were given.</p>')
    parts.append("</section>")
    return "".join(parts)


def _not_checked(report: Report) -> str:
    if not report.not_checked:
        return (
            '<section id="not-checked"><h2>Not checked</h2><p>✔ Everything planned was checked.</p></section>'
        )
    rows = "".join(f"<tr><td>{e(n.what)}</td><td>{e(n.why)}</td></tr>" for n in report.not_checked)
    return (
        '<section id="not-checked"><h2>Not checked, and why</h2><div class="scroll"><table>'
        f'<thead><tr><th scope="col">what</th><th scope="col">why</th></tr></thead><tbody>{rows}</tbody>'
        "</table></div></section>"
    )


def _history_list(title: str, findings: list[Finding], icon: str, names: NodeNames) -> str:
    if not findings:
        return f"<h3>{e(title)}: 0</h3>"
    items = "".join(
        f"<li>{icon} {e(names.label(f.node))}: <code>{e(f.check)}</code> {e(f.summary)}</li>"
        for f in findings[:HISTORY_LIMIT]
    )
    more = f"<li>… +{len(findings) - HISTORY_LIMIT} more</li>" if len(findings) > HISTORY_LIMIT else ""
    return f"<h3>{e(title)}: {len(findings)}</h3><ul>{items}{more}</ul>"


def _history(view: ReportView) -> str:
    h = view.report.history
    if h is None:
        return (
            '<section id="history"><h2>Since the last run</h2>'
            "<p>No previous report to compare with.</p></section>"
        )
    parts = [
        '<section id="history"><h2>Since the last run</h2>',
        f"<p class='note'>Compared with {e(h.previous_location or 'the previous report')}.</p>",
        *(_history_list(title, findings, icon, view.names) for title, findings, icon in history_lists(h)),
    ]
    if h.drift:
        items = "".join(f"<li>↕ {e(describe_drift(d, view.names))}</li>" for d in h.drift[:HISTORY_LIMIT])
        parts.append(f"<h3>Drift of key figures: {len(h.drift)}</h3><ul>{items}</ul>")
    else:
        parts.append("<h3>Drift of key figures: 0</h3>")
    parts.append("</section>")
    return "".join(parts)
