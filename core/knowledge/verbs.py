"""Verbs in their base form, as technical prose uses them: what tells an order ("Stop the service")
from a noun ("Version of the package"), and a verb of the third person ("runs") from a plural noun
("headphones"). A list, not a tagger: a word missing from it is read as not a verb."""
from __future__ import annotations

VERBS = frozenset("""
mean denote imply matter seem
abort absorb accept access accumulate achieve acknowledge acquire act activate adapt add address adjust admit adopt
advance affect aggregate alert align allocate allow alter analyze analyse announce annotate answer append apply
approve archive arrange ask assemble assert assign assume attach attempt authenticate authorize automate avoid
back backup bag balance ban base become begin behave believe belong bind block book boot bootstrap borrow break
brief bring browse buffer build bump bundle buy cache calculate call cancel capture carry cast catch cause change
charge chat check choose chock cite claim clarify classify clean cleanup clear click clone close collect combine
come comment commit communicate compare compile complain complete comply compose compress compute concatenate
conclude configure confirm conflict connect consider consist consult consume contact contain continue contribute
control convert copy correct cost count cover crash create cross customize cut deal debug decide declare decode
decompress decrease decrypt dedicate default defer define delay delegate delete deliver demonstrate deny depend
deploy deprecate derive describe design destroy detach detect determine develop differ disable disallow discard
disconnect discover discuss dispatch display distinguish distribute divide do document download drain draw drop dry
dump duplicate edit elect eliminate email embed emit emulate enable encode encounter encourage encrypt end enforce
ensure enter escalate escape escort establish estimate evaluate examine exceed exclude execute exist exit expand
expect expire explain export expose express extend extract fail fall fetch file fill filter find finish fit fix flag
flush fold follow force fork format forward free freeze fulfil fulfill gain gather generate get give go grant group
grow guarantee guess guide halt handle hang happen hash have hear help hide highlight hold hook identify ignore
implement import improve include increase increment indicate inform inherit initialize initialise inject insert
inspect install instantiate integrate intend interact intercept interpret interrupt introduce invalidate invoke
isolate issue iterate join keep kill know label launch lead learn leave let lift limit link list listen load locate
lock log look loop lose lower maintain make manage map mark match measure merge migrate minimize mirror miss modify
monitor mount move multiply name navigate need negotiate nest normalize notice notify obey observe obtain occur offer
omit open operate optimize order organize output overlap override overwrite own pack parse pass paste patch pause
pay perform permit pick pin place plan play plug point poll populate post precede predict prefer prefix prepare
prepend present preserve press prevent print proceed process produce prohibit promote prompt propagate propose
protect provide prune publish pull purge push put query queue quit quote raise reach read rebuild reboot receive
recognize recommend recompile reconnect record recover redirect reduce refer refresh refuse register reinstall
reject relate release reload rely remain remember remind remove rename render reopen reorder repair repeat replace
replicate reply report represent request require reserve reset resize resolve respect respond restart restore
restrict resume retain retrieve retry return reuse reveal revert review revoke rewrite rinse rotate round route run
satisfy save scan schedule scroll seal search secure see seek select sell send separate serialize serve set settle
setup share shift ship show shrink shut sign signal simplify skip sleep slow solve sort specify spend split spread
stack stage start stay step stop store stow stream strip structure submit subscribe substitute succeed suggest suit
supply support suppress surround suspend swap switch synchronize tag take talk tape target teach tell terminate test
thank throw tie tighten time track transfer transform translate transmit treat trigger trim truncate trust try turn
type uncomment undo uninstall unlock unmount unpack unplug unset update upgrade upload use utilize validate vary
verify view visit wait walk want warn wash watch wear weigh wipe wish withdraw work wrap write yield signify denote imply comprise constitute equal involve lack reflect resemble suffice tend
color colour encompass concern govern precede outline summarize summarise span spawn bypass alter exclude hold last
""".split())


def base(word: str) -> str | None:
    """The base form of a verb of the third person ("runs" → "run", "empties" → "empty",
    "passes" → "pass"), or None when the word is not one."""
    w = word.lower()
    if w in ("has", "does", "goes", "is"):
        return {"has": "have", "does": "do", "goes": "go", "is": "be"}[w]
    if not w.endswith("s") or len(w) < 3:
        return None
    for stem in ((w[:-3] + "y") if w.endswith("ies") else None, w[:-2] if w.endswith("es") else None, w[:-1]):
        if stem and stem in VERBS:
            return stem
    return None
