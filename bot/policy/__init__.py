"""Who may do what, decided in one place.

Every entry point that lets a person act — a message (talk), a ``/threadline`` command, a Stop
click or command, an approval click, a tool call made for someone — asks
:class:`~bot.policy.who.Policy` and gets a :class:`~bot.policy.who.Verdict`; nothing else
reads ``[access]`` or matches a rule against a thread key.

- :mod:`bot.policy.keys`: a thread key in parts; which rule covers a key, the most specific one
- :mod:`bot.policy.who`: :class:`~bot.policy.who.Policy`, built once from the settings; what it
  answers (allowed, or refused with the reason); allow and deny lists over a person
- :mod:`bot.policy.words`: the effective policy in plain words (``threadline doctor``)

Deny lists always win: a person or channel on one is refused on every path, whatever an allow
list, an admin entry or ``anyone = true`` says.

Import the modules themselves: :mod:`bot.config` uses :mod:`bot.policy.keys`, so this package
imports nothing at its top.
"""
