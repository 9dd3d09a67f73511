"""How text from a node or a request leaves the program: one function per medium.

Why one module: a hostname, a log line, a cluster name from a rejected request is untrusted
text, and each place it ends up reads it differently — a terminal acts on escape sequences, a
Markdown renderer on `[links](…)`, `<html>`, `*emphasis*`, `# headings` and `@mentions`, Slack
on `<!channel>` and `@here`, a browser on `<script>`. Each medium has exactly one function here,
and the renderers call it at their boundary, so text added to a report later passes through it
too. Pure functions of `str`, importable from every layer (domain/ reaches nothing).

- `terminal`: C0 and C1 controls, DEL, ESC sequences (CSI, OSC, DCS…), and the bidirectional
  overrides removed; newline and tab kept. The CLI adds its own colours after this, never before.
- `one_line`: `terminal`, then every line break (and tab) a space: for table cells and prose.
- `html`: `one_line`-clean text with `& < > " '` as entities.
- `markdown`: CommonMark-safe inline text (`markdown_code` for a code span).
- `slack`: AWS Chatbot / Slack mrkdwn: `& < >` as entities, `@channel`-style mentions and
  `[text](link)` broken so they are shown, not acted on; `slack_link` for the renderer's own
  `<url|text>` links, the URL kept whole.
"""

from __future__ import annotations

import html as _html
import re

#: ESC sequences as terminals parse them (ECMA-48): CSI `ESC [ params final`, OSC/DCS/SOS/PM/APC
#: strings ended by BEL or `ESC \`, and the two-character escapes `ESC <byte>`.
_ESC_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC ... BEL or ST
    r"|\x1b[ -/]*[0-~]"  # nF / Fp / Fe / Fs escapes (ESC ( B, ESC c, ESC 7 ...)
    r"|\x1b"  # a lone ESC
)
#: C0 (but tab and newline), DEL, C1, and the bidi embedding/override/isolate characters that make
#: text display in another order than it is read (CVE-2021-42574, "Trojan Source").
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile(r"[\n\t\u2028\u2029\x85]+")

#: Inserted after `@` and between `](`: invisible, and no renderer reads the word as a mention
#: or the pair as a link any more.
WORD_JOINER = "\u2060"


def terminal(text: object) -> str:
    """Text a terminal shows as it is: no control character or escape sequence acts."""
    s = "" if text is None else str(text)
    if "\x1b" in s:
        s = _ESC_SEQUENCE.sub("", s)
    return _CONTROLS.sub("", s)


def one_line(text: object) -> str:
    """`terminal`, on one line: every line break or tab becomes a space."""
    return _BREAKS.sub(" ", terminal(text))


def html(text: object, *, multiline: bool = False) -> str:
    """For an HTML text node or a quoted attribute value."""
    return _html.escape(terminal(text) if multiline else one_line(text), quote=True)


#: What starts inline syntax in CommonMark / GitHub-flavoured Markdown, escaped with a backslash
#: (CommonMark lets one escape any ASCII punctuation, spec 2.4): the escape itself, emphasis and
#: strikethrough (`*`, `~`; `_` unless inside a word, where it opens nothing), links and images
#: (`[`, `]`), table cells (`|`). `<`, `>` and `&` become entities (raw HTML, autolinks, entity
#: references; a backslash before `<` is not honoured by every renderer). Parentheses, `!` or `#`
#: mid-line start nothing without those, so a summary such as "x8 (of x16)" reads unchanged.
_MD_PUNCTUATION = re.compile(r"([\\*~\[\]|])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: At the start of the text (placed after the renderer's own `- ` or `| `), what would begin a
#: block: a heading, a nested list item, a numbered item.
_MD_LEADING_BLOCK = re.compile(r"^(\s*)(#|[-+]|[0-9]{1,9}[.)])(?=\s|$)")
_MENTION = re.compile(r"@(?=[\w-])")


def _md_prose(text: str) -> str:
    s = "".join(_MD_ENTITIES.get(ch, ch) for ch in text)
    s = _MD_PUNCTUATION.sub(lambda m: "\\" + m.group(0), s)
    s = _MD_LEADING_BLOCK.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], s)
    return _MENTION.sub("@" + WORD_JOINER, s)


def markdown(text: object) -> str:
    """CommonMark-safe inline text; text in `code spans` (the rules write commands that way)
    stays a code span, shown literally by every renderer.

    Outside code spans: HTML (`<`, `>`, `&` as entities), links and images (`[`, `]`), emphasis
    (`*`, `_`, `~`), a leading heading or list marker, table cells (`|`) are escaped, and
    `@mentions` broken by a word joiner. Bare URLs stay as they are (they show their target).
    Inside a code span: only what would end it or the table cell (`` ` ``, `|`). An unmatched
    backtick is prose."""
    parts = one_line(text).split("`")
    tail = ""
    if len(parts) % 2 == 0:  # odd number of backticks: the last one opens nothing, and escaped it
        tail = "\\`" + _md_prose(parts.pop())  # cannot pair with a code span written after it
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(markdown_code(part) if part.strip() else "` `")
        else:
            out.append(_md_prose(part))
    return "".join(out) + tail


def markdown_code(text: object) -> str:
    """A code span: shown literally; a backtick would end it (replaced), a pipe would end a cell."""
    s = " ".join(one_line(text).split())
    return "`" + s.replace("`", "'").replace("|", "\\|") + "`"


def markdown_document(text: str) -> str:
    """The last pass over a whole Markdown document the renderer wrote: no terminal control
    anywhere (code spans included), no `@mention` that a chat or forge would act on."""
    lines = [terminal(line) for line in text.split("\n")]
    return "\n".join(_MENTION.sub("@" + WORD_JOINER, line) for line in lines)


#: Slack's special mentions, and a `<!…>` / `<@…>` that escaping `<` already disarms.
_SLACK_MENTION = re.compile(r"@(?=(?:channel|here|everyone|all)\b)", re.IGNORECASE)


def slack(text: object) -> str:
    """AWS Chatbot `client-markdown` / Slack mrkdwn: `&`, `<`, `>` are its control characters
    (links are `<url|text>`, mentions `<!channel>`); `@channel` / `@here` in plain text and
    Markdown `[text](url)` links are broken so they show as text."""
    s = " ".join(one_line(text).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("](", "]" + WORD_JOINER + "(")
    return _SLACK_MENTION.sub("@" + WORD_JOINER, s)


def slack_link(url: str, text: object) -> str:
    """A Slack `<url|text>` link: the text escaped like `slack`, the URL kept whole — its `&`
    separators stay as they are (a presigned URL's query needs them, and `&X-Amz-…` is no entity
    to decode). A URL holding what would end or break the link (`<`, `>`, `|`, whitespace, a
    control) is not linked: it is shown as escaped text."""
    label = slack(text).replace("|", "¦")
    if not url or _LINK_BREAKERS.search(url) or not url.startswith("https://"):
        return f"{label}: {slack(url)}"
    return f"<{url}|{label}>"


#: What would end a Slack link or let it carry anything but one URL.
_LINK_BREAKERS = re.compile(r"[<>|\s\x00-\x1f\x7f-\x9f`\"'\u202a-\u202e\u2066-\u2069]")


def slack_message(text: str) -> str:
    """The last pass over chat text the renderer built (its own `*bold*` and `<url|text>` kept):
    no terminal control, no special mention."""
    return _SLACK_MENTION.sub("@" + WORD_JOINER, terminal(text))
