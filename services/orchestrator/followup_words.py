"""The closed word lists the follow-up resolver's heuristics read (question words, auxiliaries, prepositions,
pronouns, nouns that name a person, a group or a place, months, frequent verbs ...).

Kept apart from the rules (``followups``) and the phrase finder (``followup_phrases``) because it is data that
both read: a list grows here without touching either.
"""

from __future__ import annotations

import re

WH = frozenset("what who whom whose when where which why how".split())
AUX = frozenset(
    """is are was were be been being am do does did has have had can could will would shall should may might must
    isn't aren't wasn't weren't don't doesn't didn't hasn't haven't won't can't""".split()
)
PREPOSITIONS = frozenset(
    """of in on at for from to by with about into over under after before during since per between among through
    without within across against toward towards near""".split()
)
DETERMINERS = frozenset("the a an this that these those our your my its their his her".split())
CONJUNCTIONS = frozenset("and or but nor so yet".split())
PERSON_PRONOUNS = {"he": "subject", "she": "subject", "him": "object", "his": "possessive", "hers": "object"}
THING_PRONOUNS = {"it": "subject", "its": "possessive"}
PLURAL_PRONOUNS = {"they": "subject", "them": "object", "their": "possessive", "theirs": "object"}
DEMONSTRATIVES = frozenset("this that".split())
FILLERS = frozenset("please also then again too".split())
# Nouns naming a person (a "he" or "she" in a follow-up can be "the lighthouse keeper").
PERSON_NOUNS = frozenset(
    """keeper manager owner author writer director officer chair chairman chairwoman chairperson ceo cfo cto coo
    president founder engineer teacher doctor nurse architect designer painter composer inventor tenant landlord
    landlady employee customer client applicant candidate student pilot captain mayor minister judge lawyer
    accountant auditor inspector supervisor contractor buyer seller patient user member winner player coach guard
    clerk secretary treasurer editor reporter researcher scientist professor lecturer translator head principal
    leader chief driver operator worker technician secretary-general governor senator spokesperson spokesman
    spokeswoman husband wife mother father son daughter brother sister man woman boy girl child""".split()
)
# Nouns naming a group or organisation (a "they" more often than an "it").
GROUP_NOUNS = frozenset(
    """board committee team council company firm government ministry department agency staff crew family group
    union police authorities partners suppliers vendors customers members""".split()
)
# Last words of organisation, place and thing names ("Northwind Traders" is no person).
NAME_HEADS = frozenset(
    """inc ltd llc plc corp corporation company co group bank university college hospital clinic office council
    committee ministry department agency logistics freight metals plastics motors airlines systems solutions services
    holdings partners foundation institute trust association club school arena bridge hall centre center park street
    road river lake station airport port harbour harbor traders industries labs laboratories press media studios
    museum library church cathedral tower building branch plant warehouse factory mill market summit treaty act
    report manual handbook agreement plan project programme program fund festival cup league""".split()
)
PLACE_NOUNS = frozenset(
    """office branch plant warehouse factory site city town village country region building campus hospital clinic
    school station airport port harbour harbor depot store shop headquarters hq facility centre center mill lab
    laboratory library museum park hall arena""".split()
)
TITLES = frozenset("mr mrs ms miss dr prof sir dame lord lady".split())
MONTHS = frozenset(
    """january february march april may june july august september october november december jan feb mar apr jun
    jul aug sep sept oct nov dec""".split()
)
DAYS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays
    saturdays sundays weekdays weekends""".split()
)
# Frequent verbs in questions, so that "the lease say" ends its noun phrase at "say".
VERBS = frozenset(
    """say says said write writes wrote written sign signs signed own owns owned run runs ran make makes made take
    takes took give gives gave get gets got go goes went come comes came see sees saw know knows knew cost costs
    pay pays paid open opens opened close closes closed start starts started begin begins began end ends ended
    found founded lead leads led manage manages managed build builds built buy buys bought sell sells sold use
    uses used mean means meant require requires required include includes included cover covers covered allow
    allows allowed need needs needed want wants wanted inspect inspects inspected clean cleans cleaned service
    services serviced deliver delivers delivered supply supplies supplied decide decides decided approve approves
    approved publish publishes published design designs designed invent invents invented win wins won beat beats
    host hosts hosted happen happens happened work works worked live lives lived study studies studied teach
    teaches taught charge charges charged weigh weighs weighed earn earns earned employ employs employed hold
    holds held mention mentions mentioned describe describes described contain contains contained show shows
    showed shown list lists listed state states stated explain explains explained recommend recommends
    recommended change changes changed fix fixes fixed cause causes caused leave leaves left paint paints painted
    compose composes composed translate translates translated""".split()
)
YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
QUARTER = re.compile(r"^(q[1-4]|h[12]|fy\d{2,4})$", re.I)
