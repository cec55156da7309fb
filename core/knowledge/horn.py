"""Horn types by logical form (docs/architecture.md, "Documents and extraction"), each rule written
once, in the order they are tried: the first that holds wins.

    OPEN_ISSUE  the text says it is unknown, undecided or to be decided, or asks it
    PROCEDURE   ordered steps that reach a goal: a numbered list of actions, tight or loose; the
                steps a list's intro announces, or orders ("performing steps in the following
                order:"); "Step 1 … Step 2"; first … then … finally; "first <order> … then <order>".
                A list of conditions or of descriptions is not a procedure.
    CONSTRAINT  a prohibition: must not, should not, may not, shall not, must never (an adverb
                between: "should generally never"), is not allowed / permitted, is prohibited /
                forbidden, no one may, no X may, it is unwise to, be careful not to, is a syntax
                error when; an order not to ("Do not …", "Never …", "Avoid …") as a sentence of
                its own. A negation inside a description ("the authors do not consider it a
                bug") or inside a quotation is not a prohibition.
    RULE        an obligation, recommendation or permission, conditional or not (must, shall,
                should, ought to, is required, has to, needs to, needs to be done, is
                recommended, may as permission, may only, the easiest / suggested way is to,
                is the preferred way, you could consider, it is useful to); an instruction ("To
                list the packages:" and its command); a method's contract ("Should return …",
                or an obligation in any sentence of a signature's definition); or an if / when /
                unless statement of what follows: the condition opens the sentence ("If any
                standby fails, it is replaced") or a clause of its own, and its main clause does
                not ask ("If the clock says 10, what did it say?"). A condition inside a
                description ("a hook which runs when a packet arrives", "or None if there is
                none", "while checking if a login is required") says when, not what follows.
    FACT        the rest: holds unconditionally, a description of how things are; what is
                possible ("may reduce", "you may find") is no permission

An unconditional obligation is a RULE, not a FACT. Pure: the same text always gives the same type.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .verbs import VERBS, base

_WORD = re.compile(r"[A-Za-z][\w'’-]*")

_UNSETTLED = re.compile(
    r"\b(unclear|unresolved|undecided|undetermined|open question|tbd|to be (?:decided|determined|confirmed|agreed)|"
    r"not (?:yet )?(?:been )?(?:decided|settled|agreed|resolved|determined)|not yet (?:known|clear)|"
    r"(?:it|this) is not (?:known|clear)|no one knows|nobody knows|remains? to be (?:seen|decided|settled|determined)|"
    r"(?:is|are) (?:still )?under (?:discussion|consideration)|(?:is|are) (?:still )?being (?:considered|discussed|"
    r"debated)|has yet to be (?:decided|determined|settled))\b", re.I)
# Leading blanks of one line only: `^\s*` would rescan every following blank line from each line start.
_STEP_LINE = re.compile(r"^[^\S\n]*(?:\d+[.)]|step\s+\d+[:.)]?)[^\S\n]+(?=\S)", re.I | re.M)
# "first … then … finally", searched word after word: as one pattern it backtracks cubically.
_FIRST, _THEN, _FINALLY = (re.compile(rf"\b({words})\b", re.I) for words in ("first", "then", "finally|lastly"))
_QUOTED = re.compile(r"\"[^\"\n]{0,400}\"|“[^”\n]{0,400}”|«[^»\n]{0,400}»")

_MODAL_NOT = re.compile(r"(?<!\bor )\b(?:must|shall|should|may)(?:\s+(?:generally\s+|usually\s+|really\s+|"
                        r"ever\s+)?(?:not|never)\b(?!\s+only\b)|n['’]t\b)|\bmustn['’]t\b|"
                        r"\bshan['’]t\b", re.I)
_NOT_ALLOWED = re.compile(
    r"\b(?:is|are|be|being)\s+(?:strictly\s+|also\s+)?(?:not\s+(?:allowed|permitted)|prohibited|forbidden|"
    r"disallowed|banned)\b|\bnot\s+(?:allowed|permitted)\s+to\b|\bunder no circumstances\b|"
    r"\b(?:no one|nobody|no \w+(?: \w+)?)\s+(?:may|must|shall|should|is allowed to|are allowed to)\b|"
    r"\bit is an? (?:\w+ )?(?:error|\w+error) (?:to|for)\b|\b(?:is|are) an? (?:\w+ )?(?:error|\w+Error) (?:when|if)\b|"
    r"\b(?:it is|it['’]s) (?:unwise|inadvisable|a (?:bad|poor) idea|not (?:advisable|recommended|a good idea)) to\b|"
    r"^(?:be careful|take care) not to\b|\b(?:is|are)\s+never\s+\w+(?:ed|en|t)\b", re.I)
# An order not to: "Do not …", "Never …", "Avoid …" opening a sentence or following a condition's comma.
_ORDER_NOT = re.compile(r"(?:^|[.!?;:]\s+|,\s+)(?:please\s+)?(?:do not|don['’]t|never|avoid)\b(?!\s+forget)", re.I)
_POSSIBLE_NOT = re.compile(r"\bmay\s+not\s+(?:be\s+\w+able|be\s+(?:available|possible|present|supported|"
                           r"installed|needed|necessary|the case|enough|obvious|accurate|complete)|work|exist|have|"
                           r"need|always|apply|contain|include|know|want|see|notice|reflect|match|happen|succeed)\b",
                           re.I)

_POSSIBLE_BE = re.compile(r"\bmay\s+not\s+be\s+(?:\w+able|available|possible|present|supported|installed|needed|"
                          r"necessary|the case|enough|obvious|accurate|complete|reliable|safe|correct|immediately|"
                          r"visible|known)\b", re.I)
_OBLIGATION = re.compile(
    r"\b(?:must|shall|should|ought to|need not|"
    r"(?:is|are|be)\s+(?:also\s+)?(?:required|mandatory|obligatory|expected to|recommended|encouraged|"
    r"allowed to|permitted|entitled to)|required to|recommended that|we recommend|it is recommended|"
    r"(?:it is|it['’]s) (?:still |usually |often |generally |also |sometimes )?(?:a good idea|advisable|best|better|wise|"
    r"preferable|safer|necessary|essential|important) to(?! (?:note|remember|realize|understand|know)\b)|"
    r"the recommended (?:way|idiom|approach|method|practice) is|"
    r"(?:is|are) (?:usually |often |generally )?(?:advisable|preferable|a good idea)|"
    r"(?:you|we|one) (?:might|may) (?:also |instead |still )?(?:want|wish|prefer|consider|use)|"
    r"(?:don['’]t|do not|never) forget to|"
    # a recommendation worded as the best way: "The easiest way is to use …", "X is the preferred way to …"
    r"(?:the|a) (?:easiest|simplest|suggested|preferred|recommended|best|safest|usual|better|simple|quick|good) "
    r"(?:way|approach|fix|method|solution|option|practice|idiom)(?: \w+){0,3} is (?:usually |often |generally |"
    r"probably )?(?:to|by)|"
    r"(?:is|are) the (?:preferred|recommended|suggested|best|correct|proper|right) (?:way|approach|method|means|idiom)|"
    r"recommends|suggests? (?=\w+ing\b)|(?:you|one|we) (?:could|might|may) (?:also )?(?:consider|try)|"
    r"(?:it is|it['’]s|is) (?:often |usually |also |very )?(?:useful|helpful|wise) to|"
    r"(?<!that )(?<!which )(?<!who )(?:needs?|has|have) to be (?:\w+ed|\w+en|set|run|built|put|kept|done|made|used)|"
    r"may only|"
    r"only\s+[\w\s-]{1,60}\s+may)\b", re.I)
# "needs to", "has to": an obligation of a person (or of what a person writes); of a program, a description
# of what it does ("pip needs to make assumptions").
_PERSON_MUST = re.compile(r"\b(?:you|users?|one|we|the user|administrators?|maintainers?|developers?|authors?|"
                          r"packagers?|callers?|programmers?)\s+(?:\w+\s+)?(?:need|needs|have|has|had) to\b|"
                          r"\b(?:you|one|we) (?:will |also |first |still )?need (?!not\b)(?:an?|the|at least|some|your|"
                          r"\w+ access)\b", re.I)  # "you need a continuous sequence of archived WAL files": required
_MAY = re.compile(r"\b(\w+)\s+may\s+(?:also\s+|only\s+|not\s+)?(\w+)(?:\s+(\w+))?", re.I)
_POSSIBILITY_AFTER = frozenset("""take cause result lead happen vary differ change fail become seem appear occur
help affect break work exist depend look produce mean get end trigger conflict overlap lose miss differ come
prove turn find reduce increase improve slow""".split())
_POSSIBILITY_SUBJECT = frozenset("it this that there which these those what something anything".split())
_PARTICIPLE_IRREGULAR = frozenset("""given taken done made used set put run shown written sent built kept found left held
read seen known chosen drawn driven eaten hidden laid lent lost met paid sold sought spent struck sworn thrown told torn
worn won bound bought brought caught dealt fed felt fought hung heard led meant proven shut split spread stood
understood withdrawn overridden""".split())
_CONDITION = re.compile(r"(?<!\bas )(?<!\beven )(?<!\bexcept )(?<!\bdifference )(?<![-/\w])(?:if|when|whenever|unless|"
                        r"provided that|as long as|in case|only after|only if|in the event)(?![-/\w])"
                        r"(?!\s+(?:clauses?|statements?|blocks?|branch(?:es)?|expressions?|tests?)\b)(?:(?!\s+\w+ing\b)|(?<=^when)|(?<=^if)|"
                        r"(?<=^When)|(?<=^If))", re.I)
# What is said of others, or asked, is not said by the text: "it has been suggested that X should …",
# "whether X should …"; a remark in brackets is not the claim.
_REPORTED = re.compile(r"\b(?:(?:determin|check|test|verif|detect|decid)\w* if|"
                       r"(?:reason|reasons|chance|possibility|risk) (?:that|why)|assumes? that|expects? that|"
                       r"(?<!the )(?<!a )(?:suggested|proposed)|argued|claimed|said|says|believes?|thinks?|thought|"
                       r"wondered|asked|"
                       r"whether|(?:specif(?:y|ies)|determines?|controls?|sets?|describes?|decides?|defines?|"
                       r"indicates?|selects?|reports?|shows?) (?:how|what|which|whether|when|where|who))\b"
                       r"(?:[^.;:]|\.(?=\w))*", re.I)
_BRACKETS = re.compile(r"\([^()]*\)")
_WHOLLY_BRACKETED = re.compile(r"^\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", re.S)
# "whenever possible", "if necessary": a condition in name only
_ELLIPTIC = re.compile(r"\b(?:if|when|whenever|where|unless)\s+(?:at all\s+)?(?:possible|necessary|needed|required|"
                       r"available|applicable|appropriate|so|desired|present|given|known|specified|"
                       r"otherwise noted|(?:any|not)(?=\s*(?:[,.;:)]|$)))\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"“])")

_LEADING_CONDITION = re.compile(r"^(?:(?:if|when|whenever|unless|once|after|before|to|in order to|for|on)\b[^,]{1,200},"
                                r"\s*)+", re.I)
_NEVER_ORDERS = frozenset({"note", "see", "refer", "be"})
_NOT_ORDERS = frozenset({ "have", "need", "want", "wish", "like", "know", "mean", "seem",
                         "exist", "belong", "consist", "depend", "happen", "occur", "remain", "vary", "differ", "yield",
                         "return", "test", "type", "name", "list", "file", "log", "set", "order", "work", "count",
                         "map", "time", "flag", "group", "stack", "queue", "step", "structure", "target", "view",
                         "post", "record", "report", "signal", "stage", "default", "loop", "hash", "cache", "index"})
_ACTIONS = frozenset("""add adjust allow answer apply archive ask assign attach back book boot brief build call cancel
change check choose chock clean clear click clone close collect commit compile configure confirm connect contact
convert copy count create define delete deploy describe detach disable disconnect download drain drop edit email
empty enable ensure enter escalate escort examine execute exit expand export extract fetch file fill find fit fix
follow format generate get give go grant hand identify import include inform insert inspect install invoke issue
keep kill label launch leave let link list load lock log look make mark measure merge mount move name note notify
obtain open pack partition paste patch pick place plug point power prepare press print pull purge push put read
reboot record reduce refresh register reinstall reject release reload remove rename repeat replace report request
reset resize restart restore retry return review revoke run save scan schedule seal select send set setup shut sign
specify start stop store submit switch take tape tell test tick turn type uncomment unlock unmount unpack unplug
update upgrade upload use validate verify wait walk wear weigh wipe write absorb bag brief chock stow secure wash
dry rinse cover raise lower lift attach detach align tighten loosen insert withdraw""".split())
_NOT_ACTIONS = frozenset("""the a an this that these those it its they their there each every all any some no none
if when whenever unless where while whether for in on at by from of to with without as and or but also only
is are was were be been has have had can could may might must shall should will would one two three""".split())
_DETERMINERS = frozenset("the a an your all any each every this that these those its their our his her my".split())
_ANNOUNCES_STEPS = re.compile(r"\b(steps?|procedure|follow(?:ing)? (?:these|this)|in (?:this )?order|"
                              r"do the following|as follows|^to \w+|how to)\b", re.I)
# Steps the intro orders ("performing steps in the following order:"), not an order things are read in.
_IN_ORDER = re.compile(r"\b(?:steps?|perform\w*|do(?:ing)?|run(?:ning)?|follow(?:ing)?|apply(?:ing)?|"
                       r"carry(?:ing)? out)\b"
                       r"[^:]{0,60}\bin (?:the following|this|that|the given) order\b", re.I)
_ANNOUNCES_CONDITIONS = re.compile(r"\b(conditions?|criteria|requirements?|if|when|unless|one of the following|"
                                   r"all of the following|must be (?:met|true)|are true|holds?)\b", re.I)


@dataclass(frozen=True)
class Form:
    """What a claim's type is read from: its words, and for a list its items, whether they are
    numbered and the line that introduces them; for a definition, its term."""
    text: str
    items: tuple[str, ...] = ()
    ordered: bool = False
    intro: str = ""
    term: str = ""


@lru_cache(maxsize=4096)  # asked of one form by each rule tried: pure, and a tenth of the parse
def main_claim(form: Form) -> str:
    """The words a prohibition, an obligation or a condition is looked for in: the claim's first
    sentence (a definition's, after its term), without what is in brackets, quoted, or said of
    others ("it has been suggested that …", "whether …")."""
    text = form.text
    if form.term and text.startswith(form.term):
        text = text[len(form.term):].lstrip(": ")
    if _WHOLLY_BRACKETED.match(text):
        text = text.strip()[1:-1]  # "(If you lack the privileges, you can still …)": a claim of its own
    text = _BRACKETS.sub("", _BRACKETS.sub("", text))
    text = _SENTENCE.split(text.strip(), maxsplit=1)[0] if text.strip() else text
    return _ELLIPTIC.sub("", _REPORTED.sub("", _QUOTED.sub("", text)))


@lru_cache(maxsize=4096)  # asked of one form up to three times by horn_type
def unsettled(form: Form) -> bool:
    text = _QUOTED.sub("", form.text.strip())
    return text.endswith("?") or bool(_UNSETTLED.search(text))


def action(item: str) -> bool:
    """Whether a list item or a sentence reads as an order (an imperative): "Stop the service", "If
    wet, walk slowly", "Never run" — not "The service", "Note that …" or "See …"."""
    item = _LEADING_CONDITION.sub("", item.strip().lstrip("-*•(`\"“ "), count=1)  # "If wet, walk slowly."
    item = _SOFTENER.sub("", item, count=1)  # "Just import the config module": the order is "import"
    words = _WORD.findall(item)
    if not words:
        return False
    if any(w.lower() in _SUBJECT_MODALS for w in words[1:5]) and "," not in item.split(" ", 5)[-1][:0] and \
            not any(w.endswith(",") for w in item.split()[:4]):
        return False  # "Include files or directories can be used …": a subject and its modal, no order
    first = words[0].lower()
    if first in ("never", "don't", "don’t") or first == "do" and len(words) > 1 and words[1].lower() == "not":
        return True
    if len(words) > 1 and (words[1].lower() in _NO_ORDER_AFTER or first == "back" and words[1].lower() in ("in", "then")):
        return False  # "join() is a string method", "Back in the days of 1.5": the verb is no order
    if words[0].isupper() and len(words[0]) > 1:
        return False  # "STOP halts the belt": a name in capitals, not an order
    if first in _NEVER_ORDERS or first not in VERBS:
        return False
    # "Test the horn", "Report the spill": a word that is a noun too is an order when an object follows it.
    return first not in _NOT_ORDERS or len(words) > 1 and words[1].lower() in _DETERMINERS | {"it", "them", "all"}


_SOFTENER = re.compile(r"^(?:just|simply|then|now|instead|also|please|first|finally)\s+(?=[a-z])", re.I)
_SUBJECT_MODALS = frozenset("can could may might must should will would shall cannot is are was were".split())
_NO_ORDER_AFTER = frozenset("is are was were has have can may must should will would does".split())

_SURE = re.compile(r"^(?:be sure|make sure|remember|don['’]t forget|do not forget|take care|consider \w+ing|"
                   r"try \w+ing|avoid \w+ing)\b", re.I)


def order(sentence: str) -> bool:
    """Whether a sentence is an order, more strictly than a list's item: its verb opens it and an
    object follows ("Use a list", "Consult the guide"), so that "Exit interviews are …" is no order."""
    sentence = _SOFTENER.sub("", _LEADING_CONDITION.sub("", sentence.strip(), count=1), count=1)
    if _SURE.match(sentence):
        return True
    words = _WORD.findall(sentence)
    return action(sentence) and len(words) > 1 and (
        words[1].lower() in _DETERMINERS | {"it", "them", "all", "only", "one", "both", "either", "up", "out", "in", "for",
                                            "at", "into", "through", "with"}
        or bool(re.match(r"^\S+\s+[`'\"“(]|^\S+\s+\S*[._/-]", sentence))
        or _BARE_OBJECT.match(sentence) is not None and words[0].lower() not in _NOT_ORDERS and
        not any(w.lower() in _SUBJECT_MODALS or (base(w) or w.lower() in VERBS) and words[k - 1].lower() not in
                _DETERMINERS for k, w in enumerate(words[2:10], start=2)))


# An order whose object is a bare plural and then a place or purpose: "Import modules at the top of a file."
_BARE_OBJECT = re.compile(r"^[A-Z][a-z]+ [a-z]+s (?:at|in|on|from|into|before|after|with|to|for|by|when|if|only)\b")


_STATIVE = frozenset("have be contain include consist belong depend exist seem appear mean require need hold know own "
                     "match equal represent remain lack support use allow accept cost last".split())


def acted(item: str) -> bool:
    """Whether a numbered list's item is a step: an order, or what someone does ("HR records the new
    hire", "The manager confirms the last day"), not what something is or has."""
    if action(item):
        return True
    words = _WORD.findall(item)[:6]
    for k, word in enumerate(words[1:], start=1):
        stem = base(word)
        if stem is not None:
            return stem not in _STATIVE and words[k - 1].lower() not in _DETERMINERS
    return False


def steps(form: Form) -> bool:
    if form.items:
        if form.intro and _IN_ORDER.search(form.intro) and len(form.items) >= 2:
            return True  # "… performing steps in the following order:": ordered by the intro, whatever its items say
        actions = sum((acted if form.ordered else action)(item) for item in form.items)
        conditional = sum(bool(_CONDITION.search(item)) for item in form.items)
        if len(form.items) < 2 or actions * 2 < len(form.items) or not form.ordered and conditional * 2 >= len(form.items):
            return False  # a list of conditions or descriptions, or of rules each with its condition
        if form.intro and _ANNOUNCES_CONDITIONS.search(form.intro) and not _ANNOUNCES_STEPS.search(form.intro):
            return False
        if form.intro and _ANNOUNCES_STEPS.search(form.intro):
            return True
        return form.ordered or actions == len(form.items) and not form.intro
    if len(_STEP_LINE.findall(form.text)) >= 2:
        return True
    first = _FIRST.search(form.text)
    then = first and _THEN.search(form.text, first.end())
    after_first, after_then = form.text[first.end():] if first else "", form.text[then.end():] if then else ""
    if then and (order(after_first) or action(after_first)) and (order(after_then) or action(after_then)):
        return True  # "To test it, first make sure it is set, and then use …": two orders in order
    return bool(then and _FINALLY.search(form.text, then.end()))


def prohibition(form: Form) -> bool:
    text = main_claim(form)
    if _NOT_ALLOWED.search(text) or _ORDER_NOT.search(text):
        return True
    for found in _MODAL_NOT.finditer(text):
        before = text[:found.start()].split()[-1:]
        if found.group(0).lower().startswith("may") and (before and before[0].lower() in _POSSIBILITY_SUBJECT or
                                                        _POSSIBLE_NOT.match(text, found.start()) and not before):
            continue  # "this may not work": what is possible, not what is forbidden
        if found.group(0).lower().startswith("may") and _POSSIBLE_BE.match(text, found.start()):
            continue  # "X may not be available"
        return True
    return False


# A time or a frequency after "may be <participle>": what may happen, no permission.
_WHEN_POSSIBLE = re.compile(r"[^.;:]{0,60}?\b(?:in the future|later|again|eventually|(?:multiple|several|many|a few) times|"
                            r"at (?:an?|any|some) [^.,;]{0,30}?\b(?:time|times|point|moment)|within the same)\b", re.I)


def _permission(match: re.Match) -> bool:
    """Whether a "may" grants (a permission), rather than says what is possible ("it may take a while")."""
    subject, verb, after = match.group(1).lower(), match.group(2).lower(), (match.group(3) or "").lower()
    if subject in _POSSIBILITY_SUBJECT or verb in _POSSIBILITY_AFTER or verb == "or":  # "may or may not": possible
        return False
    if verb == "be":  # "may be removed" grants; "may be slow" says what is possible
        if _WHEN_POSSIBLE.match(match.string, match.end()):
            return False  # "may be added in the future", "may be traversed multiple times": what can happen
        return after.endswith("ed") or after in _PARTICIPLE_IRREGULAR
    return True


# What may stand before a leading condition: a label, a link word ("Note that if …", "But when …", "Or, if …").
_OPENER = re.compile(r"^(?:[\w .-]{0,40}:\s+|(?:note(?: also| however)?(?: that)?|but|and|or|so|also|however|thus|"
                     r"otherwise|instead|then|in particular|in addition|similarly|likewise|conversely)\b,?\s*)*", re.I)
_CLAUSE_CONDITION = re.compile(r"[,;:]\s+(?=(?:if|when|whenever|unless|once)\b[^,;]{1,200},)", re.I)


def conditional(text: str) -> bool:
    """An if / when / unless statement of what follows: the condition opens the sentence ("If the
    file is missing, the server stops"), or a clause of its own ("…; when set to off, it stops").
    A condition inside a description ("is installed when the cluster is created", "or None if
    there is none") says when a thing happens, not what follows: a FACT."""
    text = text.strip()
    if text.endswith("?"):
        return False  # "If the clock says 10 now, what did it say an hour ago?": a question, not what follows
    opened = _OPENER.match(text)
    rest = text[opened.end():] if opened else text
    found = _CONDITION.match(rest) or _EVERY_TIME.match(rest)
    if found:
        return True
    return any(not _DESCRIBED_CONDITION.search(text[:m.start()]) and
               not _WHETHER_IF.search(text[max(0, m.start() - 40):m.start()]) for m in _CONDITION.finditer(text))


# A condition that belongs to a description, not to what follows: inside a relative clause ("a callback
# which will be called when I/O is possible"), an alternative value ("or None if there is none"); and an
# "if" that means "whether" ("while determining if a password is required").
_DESCRIBED_CONDITION = re.compile(r"(?:\b(?:which|who|whose)\b[^,;:]*|\bor (?:None|NULL|null|empty|zero|-1|false|"
                                  r"False|true|True)\s*)$")
_WHETHER_IF = re.compile(r"\b(?:determin\w*|check\w*|test\w*|see|seeing|know\w*|ask\w*|decid\w*|tell\w*|find out|"
                         r"wonder\w*|verif\w*|detect\w*)\s+$", re.I)


# "To list outdated packages:" and the command: an instruction, a RULE (several steps are a PROCEDURE).
_INSTRUCTION = re.compile(r"^(?:in order )?to [a-z][^.:\n]{2,160}:\s*(?:$|```|\$ |>>> |python |pip |py )", re.I)
# "Should return …" with no subject: what a method or a setting must do.
_CONTRACT = re.compile(r"(?:^|[.:]\s+)(?:[Ss]hould|[Mm]ust) (?:return|be|raise|accept|take|have|not)\b")
_EVERY_TIME = re.compile(r"(?:every|each|any) time\b", re.I)


_AFTER_COLON = re.compile(r":\s+(?=[a-z])")


def rule(form: Form) -> bool:
    text = main_claim(form)
    if _INSTRUCTION.match(form.text) or _CONTRACT.search(form.text):
        return True
    if form.term and "(" in form.term and _OBLIGATION.search(_QUOTED.sub("", form.text)):
        return True  # a method's contract: "object.__len__(self): Called to … Should return …"
    if _OBLIGATION.search(text) or _PERSON_MUST.search(text) or conditional(text):
        return True
    if not form.term and not form.items and (order(text) or any(order(after) for after in _AFTER_COLON.split(text)[1:2])):
        return True  # an order: "Use a list", "To import it, run …", "X offers a better way: write one file …"
    return any(_permission(m) for m in _MAY.finditer(text))


# The table, in the order the rules are tried (docs/architecture.md, "Documents and extraction").
RULES = (
    ("OPEN_ISSUE", unsettled),
    ("PROCEDURE", steps),
    ("CONSTRAINT", prohibition),
    ("RULE", rule),
    ("FACT", lambda form: True),
)


# A definition that describes a setting or what something does ("work_mem (integer): Sets the base
# maximum …", "Specifies the name of a file that the server should create"): the modals of its
# clauses and a "when" inside a phrase ("the cost charged when vacuum modifies a block") say how the
# thing behaves, so it is a FACT unless it forbids, or opens on a condition ("When set to off, …": a RULE).
_SETTING = re.compile(r"^[\w.$-]+ \((?:boolean|integer|string|enum|real|floating point|numeric|bool|int|float|text)\)$",
                      re.I)
_DESCRIBES = re.compile(r"^(?:specifies|sets|controls|determines|enables|disables|reports|selects|defines|"
                        r"indicates|names|gives|causes|allows|limits|the (?:amount|number|maximum|minimum|time|name|"
                        r"size|estimated|default|cost|path|directory|location|fraction|interval|delay|list))\b", re.I)


def describes(form: Form) -> bool:
    if not form.term:
        return False
    body = form.text[len(form.term):].lstrip(": ") if form.text.startswith(form.term) else form.text
    if _OPENS_ON_CONDITION.match(body):
        return False
    return bool(_SETTING.match(form.term.strip()) or _DESCRIBES.match(body))


_OPENS_ON_CONDITION = re.compile(r"^(?:if|when|whenever|unless|only if|once)\b", re.I)


def horn_type(form: Form) -> str:
    if describes(form) and not unsettled(form):
        return "CONSTRAINT" if prohibition(form) else "FACT"
    if form.items and not unsettled(form) and not steps(form):
        # A list says what its intro says ("The following keys must …"); an intro that only
        # describes ("The following rules apply:") leaves it to what most of its items say.
        said = horn_type(Form(form.intro)) if form.intro else "FACT"
        if said != "FACT":
            return said
        votes = [horn_type(Form(item)) for item in form.items]
        return max(("CONSTRAINT", "RULE", "FACT"), key=lambda t: (votes.count(t), t == "FACT"))
    return next(name for name, holds in RULES if holds(form))


def of_text(text: str) -> str:
    """The Horn type of a text alone (a candidate added by hand, a generated answer): numbered
    lines read as a numbered list."""
    lines = [line for line in text.splitlines() if line.strip()]
    numbered = [line for line in lines if _STEP_LINE.match(line)]
    if len(numbered) >= 2:
        items = tuple(_STEP_LINE.sub("", line, count=1).strip() for line in numbered)
        intro = next((line for line in lines if not _STEP_LINE.match(line)), "") if lines[0] not in numbered else ""
        return horn_type(Form(text, items, True, intro))
    return horn_type(Form(text))
