"""What the offline demo model makes of a person's message: small talk, a request to do
something, files shared, or a question it cannot answer. Plain word rules, so the demo stays
deterministic."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

MAX_COMMAND_CHARS = 200


class Kind(Enum):
    GREETING = "greeting"
    THANKS = "thanks"
    IDENTITY = "identity"
    HOW_ARE_YOU = "how_are_you"
    BYE = "bye"
    ACK = "ack"
    RUN = "run"
    """Run a command (``command`` says which)."""
    WRITE_FILE = "write_file"
    """Create a file (``path`` says which)."""
    TASK = "task"
    """Another request to do something: the demo says it cannot, and shows a command instead."""
    FILES = "files"
    """Files shared without a word."""
    QUESTION = "question"
    """Anything else: the demo cannot answer it."""


SMALL_TALK = frozenset(
    {Kind.GREETING, Kind.THANKS, Kind.IDENTITY, Kind.HOW_ARE_YOU, Kind.BYE, Kind.ACK}
)


@dataclass(frozen=True, slots=True)
class Ask:
    """One person's message as the demo understands it."""

    author: str | None
    text: str
    kind: Kind
    command: str | None = None
    path: str | None = None
    request: str = ""
    """What was asked, without small talk and lead-ins ("make a plan for a team lunch")."""
    files: tuple[str, ...] = ()
    """The names of the files shared with the message."""

    @property
    def small_talk(self) -> bool:
        return self.kind in SMALL_TALK


_AUTHOR = re.compile(r"^\[([^\]\n]{1,80})\]: ")
_SHARED = re.compile(r"(?:^|\n\n)Shared \d+ files? \([^)\n]*\):\n")
_SHARED_NAME = re.compile(r"^- (?!.*: not (?:downloaded|read) \()(.+?) \(", re.M)
"""A file saved in the workspace, in that note (not one left out: ``- name: not read (…)``)."""
_SMALL_TALK_RULES: tuple[tuple[Kind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        (
            Kind.GREETING,
            r"(hi|hello|hey|hiya|howdy|yo|greetings|good (morning|afternoon|evening|day))( there| all| everyone| threadline| bot)?",
        ),
        (
            Kind.THANKS,
            r"(thanks|thank you|thanks a lot|many thanks|thx|ty|cheers|much appreciated)( so much| again| threadline| bot)?",
        ),
        (
            Kind.IDENTITY,
            r"(who|what) are you|what can you do|what is this|what's this|are you (a bot|real|human|an ai)|help|introduce yourself",
        ),
        (
            Kind.HOW_ARE_YOU,
            r"how are (you|things)( doing)?( today)?|how's it going|how is it going|what's up|sup",
        ),
        (
            Kind.BYE,
            r"(bye|goodbye|good bye|see you|see ya|later|good night)( for now| later| then)?",
        ),
        (Kind.ACK, r"(ok|okay|k|cool|great|nice|perfect|awesome|got it|sounds good|lol|yes|no)"),
    )
)
_LEAD_INS = re.compile(
    r"^(?:(?:please|pls|now|ok|okay|so|and|also|then|next|first|hey|"
    r"(?:can|could|would|will) you|i want you to|i'd like you to|i would like you to|let's|lets)"
    r"[,!]?\s+)+",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ACTION_VERBS = frozenset(
    {
        "run",
        "execute",
        "exec",
        "list",
        "show",
        "check",
        "create",
        "make",
        "write",
        "build",
        "plan",
        "draft",
        "organise",
        "organize",
        "prepare",
        "add",
        "generate",
        "start",
        "set",
        "fix",
        "find",
        "search",
        "look",
        "install",
        "test",
        "deploy",
        "clean",
        "delete",
        "remove",
        "rename",
        "move",
        "copy",
        "compile",
        "count",
        "print",
        "save",
        "outline",
        "sketch",
        "schedule",
        "sort",
    }
)
_SHELL_WORDS = frozenset(
    {
        "ls",
        "pwd",
        "echo",
        "date",
        "whoami",
        "uname",
        "cat",
        "head",
        "tail",
        "wc",
        "df",
        "du",
        "id",
        "hostname",
        "uptime",
        "touch",
        "mkdir",
        "find",
        "grep",
        "git",
        "printf",
        "true",
        "false",
        "seq",
        "sort",
        "python",
        "python3",
        "which",
        "tree",
        "stat",
    }
)
_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
_RUN = re.compile(r"\b(?:run|execute|exec)\s+(?:the command\s+)?(.+)$", re.I)
_FILE = re.compile(r"\b(?:create|make|write|add|save)\b.*\bfile\b", re.I)
_FILE_NAME = re.compile(r"(?:called|named)\s+[`'\"]?([\w./-]+)|\b([\w-]+\.[A-Za-z0-9]{1,8})\b")


def understand(content: str) -> Ask:
    """The demo's reading of a user message as it appears on the wire (``[Name]: text``, then
    the note on the files shared with it, if any)."""
    author, said = _split_author(content)
    text, files = _split_files(said)
    rest = _without_small_talk(text)
    if not rest:
        kind = Kind.FILES if files and not text.strip() else _small_talk_kind(text)
        return Ask(author, text, kind, files=files)
    request = _request(rest)
    command = _command(rest)
    if command is not None:
        return Ask(author, text, Kind.RUN, command=command, request=request, files=files)
    if _FILE.search(rest):
        path = _file_name(rest)
        return Ask(author, text, Kind.WRITE_FILE, path=path, request=request, files=files)
    first = _words(request.lower())
    kind = Kind.TASK if first and first[0] in _ACTION_VERBS else Kind.QUESTION
    return Ask(author, text, kind, request=request, files=files)


def _split_files(said: str) -> tuple[str, tuple[str, ...]]:
    """The person's own words, and the names in the note on the files they shared."""
    match = _SHARED.search(said)
    if match is None:
        return said, ()
    names = _SHARED_NAME.findall(said[match.end() :])
    return said[: match.start()], tuple(names)


def _request(rest: str) -> str:
    """``rest`` without its lead-ins and end mark: "Could you plan X?" → "plan X"."""
    first = rest.strip().splitlines()[0] if rest.strip() else ""
    request = _LEAD_INS.sub("", first).strip().rstrip(".!?").strip()
    return request[:1].lower() + request[1:]


def _split_author(content: str) -> tuple[str | None, str]:
    match = _AUTHOR.match(content)
    if match is None:
        return None, content
    return match.group(1), content[match.end() :]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text)


def _normal(sentence: str) -> str:
    return " ".join(_words(sentence.lower()))


def _small_talk_kind(text: str) -> Kind:
    """The kind of the first small-talk sentence of ``text`` (only small talk in it)."""
    for sentence in _SENTENCE_END.split(text.strip()):
        for kind, rule in _SMALL_TALK_RULES:
            if rule.fullmatch(_normal(sentence)):
                return kind
    return Kind.ACK


def _is_small_talk(sentence: str) -> bool:
    normal = _normal(sentence)
    return not normal or any(rule.fullmatch(normal) for _, rule in _SMALL_TALK_RULES)


def _without_small_talk(text: str) -> str:
    """``text`` without its leading small-talk sentences ("Thanks! Now run ls" → "Now run ls")."""
    sentences = _SENTENCE_END.split(text.strip())
    while sentences and _is_small_talk(sentences[0]):
        sentences.pop(0)
    if len(sentences) == 1:  # "hello, run ls": a greeting before a comma
        head, _, tail = sentences[0].partition(",")
        if tail.strip() and _is_small_talk(head):
            sentences = [tail.strip()]
    return " ".join(sentences)


def _command(request: str) -> str | None:
    """The command line a request asks to run, if it names one."""
    if (quoted := _BACKTICKED.search(request)) is not None and _asks_to_run(request):
        return quoted.group(1).strip()
    line = request.strip().splitlines()[0] if request.strip() else ""
    run = _RUN.search(line)
    candidate = run.group(1) if run is not None else _LEAD_INS.sub("", line)
    candidate = _trim(candidate)
    first = candidate.split(maxsplit=1)[0] if candidate else ""
    if first in _SHELL_WORDS and len(candidate) <= MAX_COMMAND_CHARS:
        return candidate
    return None


def _asks_to_run(request: str) -> bool:
    lowered = request.lower()
    return any(word in lowered for word in ("run", "exec", "command", "shell"))


def _trim(candidate: str) -> str:
    candidate = candidate.strip().rstrip("?!")
    if candidate.endswith(".") and not candidate.endswith((" .", "..")):
        candidate = candidate[:-1]
    return re.sub(r"\s+(?:please|for me|in your workspace)$", "", candidate.strip(), flags=re.I)


def _file_name(request: str) -> str:
    match = _FILE_NAME.search(request)
    if match is None:
        return "notes.md"
    name = (match.group(1) or match.group(2) or "").rstrip(".")
    if not name or ".." in name or name.startswith("/"):
        return "notes.md"
    return name
