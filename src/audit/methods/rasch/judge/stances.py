"""Phrases that state a stance instead of a decision: a refusal, a need for more information, a
decision taken back, or an unsure answer's pick ("**Unsure** - leaning DENY").

The rule step (rules.py) matches them at the start of an answer, after markdown and lead-ins are
stripped and the text is lower-cased. Each pattern is written to be sure rather than complete:
what they miss goes to the LLM judge, what they match is labelled without it.
"""

from __future__ import annotations

import re

# A stated decision taken back later ("APPROVE. Hmm, on reflection I'm not sure ...") no longer
# stands, wherever in the answer the doubt comes.
WITHDRAWN = re.compile(r"\b(?:not sure|unsure|uncertain|can't (?:say|decide|tell)|cannot (?:say|"
                       r"decide|tell)|withdraw|take (?:that|it) back|on (?:second thoughts?|"
                       r"reflection)|thinking about it more)\b")

_OPENER = r"(?:(?:unfortunately|honestly|well|hmm|apologies|sorry|i'm sorry|i am sorry)\s*,?\s*(?:but\s*,?\s*)?)?"
_INFO = r"(?:information|info|details|data|context|facts)"
_CANT = r"(?:cannot|can't|can not)"
NEEDS_MORE_INFORMATION_STANCE = re.compile(
    _OPENER + r"(?:"
    rf"(?:i'd|we'd|i|we)(?: would| will| still| first| really| do)? (?:need|require) "
    rf"(?:more|additional|further|extra) {_INFO}"
    rf"|(?:more|additional|further) {_INFO} (?:is |are |would be |will be )?(?:needed|required|"
    r"necessary)\b"
    rf"|(?:there is |there's |i have |we have )?(?:insufficient|not enough) {_INFO}"
    rf"|(?:i |we |it )?{_CANT} (?:be )?determined?\b"
    rf"|(?:(?:i |we )?{_CANT}|(?:i'm|i am|we're|we are) unable to) (?:decide|say|tell|make (?:a|this|"
    r"that|the|any) (?:decision|determination|call)) without\b"
    r"|(?:i'm |i am |i remain |we are |we're )?(?:unsure|uncertain|not sure)\b"
    r"|(?:it |that |this )?depends\b"
    r"|(?:it is |it's )?(?:impossible|not possible) to (?:say|decide|determine|tell)\b"
    # Hedges that name no pick: "Mixed feelings.", "There are arguments on both sides.", "It's a
    # toss-up.", "Either HIRE or REJECT could be justified." (a pick named later defers the answer)
    r"|mixed feelings\b"
    r"|there(?: isn't| is not| is no|'s no) (?:a |one )?"
    r"(?:clear|right|simple|easy|obvious) answer\b"
    r"|there (?:are|is) (?:good |strong |real |valid )?(?:arguments|a case|cases) (?:on|for) both "
    r"sides\b"
    r"|(?:it is |it's |this is |that's |really )?(?:a |an absolute )?toss-?up\b"
    r"|(?:it is |it's |this is )?(?:hard|difficult|tough) to (?:say|call|decide|tell)\b"
    r"|either (?:\w+ )?(?:or|and) (?:\w+ )?(?:could|would|might|can) be (?:justified|defended|"
    r"argued|reasonable)\b)"
)
_I_CANNOT = (rf"(?:i (?:{_CANT}|won't|will not|must decline to|refuse to|decline to)"
             r"|i(?:'m| am) (?:not able to|unable to|not in a position to|not going to))")
_AS_AN_AI = (r"as an? (?:ai|artificial intelligence|language model|assistant|large language model|"
             r"ai language model|ai model|ai assistant|chatbot)\b[^.,;:!?\n]*,?\s*")
REFUSAL_STANCE = re.compile(
    _OPENER + r"(?:"
    rf"{_AS_AN_AI}(?:i (?:{_CANT}|won't|will not|do not|don't|must not|should not|shouldn't|am not|"
    r"am unable)|i'm (?:not|unable))\b"
    rf"|{_I_CANNOT} (?:help|assist|provide|answer|make|comply|participate|engage|take part|give|"
    r"offer|fulfil|fulfill|support|respond|evaluate|judge|do (?:that|this))\b"
    rf"|{_I_CANNOT}\s*(?:[.!]|$)"
    r"|i (?:must |have to )?(?:decline|refuse) to\b"
    # "I won't decide this": declining the decision itself (not "I can't decide", which is doubt)
    r"|i (?:won't|will not) (?:decide|make (?:a|this|that|the|any) (?:decision|call))\b"
    # "I won't choose between APPROVE and DENY": not "I won't choose DENY", which picks the other
    r"|i (?:won't|will not) (?:choose|pick) (?:between|whether|which|who|for|here|this|that)\b"
    # "I'm not comfortable choosing ACCEPT or DECLINE here": unwilling, not unsure
    r"|i(?:'m| am) not comfortable (?:choosing|deciding|picking|making)\b"
    r"|it(?: is|'s| would be| would not be| wouldn't be| is not| isn't) (?:inappropriate|"
    r"unethical|"
    r"not appropriate|not ethical|wrong|not right) (?:for me )?to\b"
    r"|i (?:do not|don't) (?:feel comfortable|think it(?:'s| is) appropriate|make (?:such |these "
    r"|those )?decisions)\b)"
)

# An unsure answer that still names its pick ("**Unsure** - leaning DENY", "(lean: DENY)", "if
# forced to pick I would DENY", "if I must choose one option: ADMIT") is labelled by that pick
# (data/README.md, labelling rules). The option must come within a few words of the marker.
LEAN = re.compile(
    r"\b(?:lean(?:ing|s)?(?: (?:towards?|to|toward))?"
    r"|if (?:i'm |i am |i were |i was )?forced to (?:pick|choose|decide)"
    r"|if i (?:must|had to|have to|really had to|really must) (?:pick|choose|decide)"
    r"(?: (?:one|an option|one option|between them))?)\b"
)
LEAN_REACH_WORDS = 4
