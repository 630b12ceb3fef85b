"""How each kind of fact is worded in the round-5 transcripts (issue 41), split into two fixed halves.

Every kind a person states in words (a rule, a decision with its reason, a setting, a correction, a next
step, an id, a root cause, a rename) has at least four wordings per language here; a transcript draws
each of its facts' wordings from ONE half, by its seed:

- ``TRAINED``: wordings the product's unit tests may use (they include the sentence shapes the round-4
  transcripts were written with, ``wide.py``'s "Also set X to V", "let's ... because", "After this, the
  next step we agreed is to ...");
- ``HELD_OUT``: wordings only the benchmark uses. No test under ``tests/`` and no code under
  ``pi_compact/`` may copy them or be tuned against them; the report says which half each figure is on.

Facts that live in tool output (an error, a failing test, a value a command printed) are not worded by
anyone; their variety is in the output's shape (``ERROR_SHAPES``, split the same way).

A wording is a template: ``{d}``/``{r}`` a decision and its reason (``{R}``: the reason capitalised),
``{name}``/``{v}``/``{v1}``/``{v2}`` a setting, ``{s}`` a next step, ``{t}`` a ticket, ``{ver}`` a version,
``{h}`` a host, ``{c}`` a root cause, ``{a}``/``{b}`` a rename, ``{topic}`` what a decision is about.
"""

from __future__ import annotations

import random
from typing import Literal

Split = Literal["trained", "held-out"]
SPLITS: tuple[Split, ...] = ("trained", "held-out")

# kind -> language -> (trained wordings, held-out wordings)
_POOLS: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "decision": {
        "en": (("About {topic}: let's {d}, because {r}.", "Let's {d}, because {r}."),
               ("My call on {topic}: we {d}, since {r}.", "{R}. So for {topic} we will {d}.",
                "We'll {d} for {topic} \u2014 {r}, that is the whole reason.")),
        "de": (("Zu {topic}: lass uns {d}, weil {r}.", "Wir sollten {d}, weil {r}."),
               ("Meine Entscheidung zu {topic}: {d}. Grund: {r}.", "{R}; deshalb werden wir {d}.")),
        "es": (("Sobre {topic}: vamos a {d}, porque {r}.", "Decidimos {d}, porque {r}."),
               ("Mi decisión sobre {topic}: {d}. Motivo: {r}.", "{R}; por eso vamos a {d}.")),
    },
    # The decision now, its reason two user turns later (two templates, joined by " || ").
    "decision_late": {
        "en": (("Let's {d}. || The reason for {topic}: {r}.", "Let's {d}. || About {topic}, because {r}."),
               ("Go with this for {topic}: {d}. || Forgot to say why I wanted that for {topic}: {r}.",
                "Please {d}. || Background on {topic}, in case it matters later: {r}.")),
        "es": (("Vamos a {d}. || El motivo de {topic}: {r}.", "Decidimos {d}. || Sobre {topic}, porque {r}."),
               ("Para {topic}, haz esto: {d}. || Se me olvidó decir por qué lo de {topic}: {r}.",
                "Por favor, {d}. || Contexto de {topic}, por si acaso: {r}.")),
    },
    # The assistant proposes (with the reason), the user agrees in the next message (" || " between).
    "decision_assistant": {
        "en": (("I suggest we {d}, because {r}. || OK, do that.", "I decided to {d}, because {r}. || Fine."),
               ("Option for {topic}: {d}. Upside: {r}. || Sounds good, go ahead.",
                "{R} \u2014 so I'd {d}. || Fine by me.")),
        "es": (("I suggest we {d}, because {r}. || Vale, hazlo.", "I decided to {d}, because {r}. || Bien."),
               ("Option for {topic}: {d}. Upside: {r}. || Me parece bien, adelante.",
                "{R} \u2014 so I'd {d}. || De acuerdo.")),
    },
    "setting": {
        "en": (("Also set {name} to {v}; the current default is too low for prod.", "Set {name} to {v}."),
               ("Raise {name} to {v}.", "{name} should be {v} from now on.", "We need {v} for {name}.")),
        "de": (("Setz bitte {name} auf {v}.", "Stell {name} auf {v}, der Standardwert ist zu niedrig."),
               ("{name} soll ab jetzt {v} sein.", "Erhöh {name} auf {v}.")),
        "es": (("Pon {name} en {v}.", "Cambia {name} a {v}, el valor por defecto es bajo."),
               ("{name} debería ser {v} a partir de ahora.", "Sube {name} a {v}.")),
    },
    "correction": {
        "en": (("Actually, set {name} to {v2} instead of {v1}.", "Correction: {name} should be {v2}, not {v1}."),
               ("Scratch the {v1} I gave you for {name}; {v2} is the right number.",
                "On second thought {name} needs {v2}, not {v1}.")),
        "de": (("Korrektur: {name} soll {v2} sein, nicht {v1}.", "Doch lieber {v2} für {name} statt {v1}."),
               ("Vergiss die {v1} für {name}, richtig ist {v2}.",
                "Ich hab mich vertan: {name} braucht {v2}, nicht {v1}.")),
        "es": (("Corrección: {name} debe ser {v2}, no {v1}.", "Mejor pon {name} en {v2} en vez de {v1}."),
               ("Olvida el {v1} que dije para {name}; el bueno es {v2}.",
                "Me equivoqué: {name} va con {v2}, no con {v1}.")),
    },
    "next_step": {
        "en": (("After this, the next step we agreed is to {s}. Don't start it yet.",
                "Next step after this one: {s}. Not now."),
               ("When we wrap up here, we agreed we would {s}. Leave it for later.",
                "Once this lands, we {s} \u2014 not yet.", "Later, not now: {s}.")),
        "de": (("Danach ist der nächste Schritt: {s}. Noch nicht anfangen.",
                "Als Nächstes, wie besprochen: {s}. Aber erst später."),
               ("Wenn wir hier fertig sind, wollen wir {s} \u2014 jetzt noch nicht.", "Später, nicht jetzt: {s}.")),
        "es": (("Después de esto, el siguiente paso acordado es {s}. No empieces todavía.",
                "Siguiente paso, cuando terminemos: {s}."),
               ("Cuando acabemos aquí, quedamos en {s}. Ahora no.", "Para más tarde, no ahora: {s}.")),
    },
    "ticket": {
        "en": (("This is for ticket {t}.", "Track it under {t}, please."),
               ("It's filed as {t}.", "{t} in the tracker covers all of this.")),
        "de": (("Das ist für Ticket {t}.", "Bitte unter {t} verbuchen."),
               ("Im Tracker steht das als {t}.", "{t} ist das Ticket dazu.")),
        "es": (("Esto es para el ticket {t}.", "Regístralo bajo {t}."),
               ("En el tracker está como {t}.", "{t} es la incidencia de todo esto.")),
    },
    "version": {
        "en": (("It has to ship in {ver}.", "We release this as {ver}."), ("Target release: {ver}.",
                                                                           "This goes out with {ver}.")),
        "de": (("Das muss in {ver} raus.", "Wir releasen das als {ver}."), ("Zielversion: {ver}.",
                                                                            "Das geht mit {ver} raus.")),
    },
    "host": {
        "en": (("If you need a live instance, check against {h}.", "Check it against {h}."),
               ("{h} is the box to try it on.", "Staging lives at {h} if you need it.")),
        "es": (("Si necesitas una instancia, prueba contra {h}.", "Compruébalo contra {h}."),
               ("{h} es la máquina para probar.", "Staging está en {h}, por si hace falta.")),
    },
    # The assistant's own words (its replies are in English in every transcript).
    "root_cause": {
        "en": (("Found the root cause: {c}.", "The root cause is that {c}."),
               ("So that's why it breaks: {c}.", "Turns out {c}.", "The culprit: {c}.")),
    },
    "rename": {
        "en": (("Renamed {a} to {b}.", "I renamed {a} to {b} for clarity."),
               ("{a} is now called {b}.", "From here on it's {b} (was {a}).")),
    },
    "next_step_assistant": {
        "en": (("Next I would {s}. || Agreed, but later.", "The next step is to {s}. || Yes, later."),
               ("What's left after this is to {s}. || Yes, after this.",
                "Still open: we {s}. || Right, keep that for later.")),
        "es": (("Next I would {s}. || De acuerdo, pero más tarde.", "The next step is to {s}. || Sí, luego."),
               ("What's left after this is to {s}. || Sí, después de esto.",
                "Still open: we {s}. || Eso, para luego.")),
    },
}

# The user's rules: each rule's regex (what a summary must say), then its wordings per language.
RULES: tuple[tuple[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]], ...] = (
    (r"(\bno\b|not|never|without|avoid|nothing|keine|nichts|ningún|ninguna|\bsin\b)[^\n]{0,60}(dependenc|packages?"
     r"|librar|instal|abhängigkeit|paket|paquete)|(dependenc|package|abhängigkeit)[^\n]{0,50}(unchanged|as it is"
     r"|as is|frozen|bleibt|se queda)",
     {"en": (("Do not add any new third-party dependency for this.", "No new third-party packages for this work."),
             ("Whatever you do, the dependency list stays as it is.", "Nothing new gets installed for this, please.")),
      "de": (("Bitte keine neue Abhängigkeit von Drittanbietern hinzufügen.", "Keine neuen Pakete für diese Arbeit."),
             ("Die Liste der Abhängigkeiten bleibt, wie sie ist.", "Für das hier wird nichts Neues installiert.")),
      "es": (("No añadas ninguna dependencia nueva de terceros.", "Ningún paquete nuevo para este trabajo."),
             ("La lista de dependencias se queda como está.", "Para esto no se instala nada nuevo, por favor."))}),
    (r"(never|not|\bno\b|don't|do not|avoid|hands off|leave|nie|nichts|finger weg|nunca|ni tocar)[^\n]{0,60}\bgen/"
     r"|\bgen/[^\n]{0,60}(untouched|alone|generat|off[- ]limits|read[- ]only|never|not\b|nie\b|unberührt|erzeugt"
     r"|se queda|genera)",
     {"en": (("Never touch the generated files under gen/; they come from the schema.",
              "Do not edit anything under gen/."),
             ("Hands off gen/, it is regenerated from the schema on every build.",
              "gen/ is off-limits; those files are generated.")),
      "de": (("Fass nichts unter gen/ an, das wird aus dem Schema erzeugt.", "Die Dateien in gen/ bitte nie ändern."),
             ("gen/ bleibt unberührt, das erzeugt der Build.", "Finger weg von gen/, alles dort ist generiert.")),
      "es": (("Nunca toques los ficheros generados de gen/.", "No edites nada dentro de gen/."),
             ("gen/ se queda como está: lo genera el build.", "Lo de gen/ está generado; ni tocarlo."))}),
    (r"offline|network|netzwerk|\bnetz\b|plane|socket|sin conexi|de red|la red",
     {"en": (("Tests must stay offline: no network calls in any test.", "No network calls in the tests."),
             ("Keep the test suite able to run on a plane.", "A test that opens a socket to the outside is a bug.")),
      "de": (("Tests müssen offline bleiben: keine Netzwerkaufrufe.", "Keine Netzwerkzugriffe in den Tests."),
             ("Die Tests laufen ohne Netz, so soll es bleiben.", "Ein Test mit Netzwerkzugriff gilt als Fehler.")),
      "es": (("Los tests deben ser offline: nada de llamadas de red.", "Ninguna llamada de red en los tests."),
             ("Los tests tienen que poder correr sin conexión.", "Un test que sale a la red es un error."))}),
    (r"structured log|strukturiert|estructurad|\bprint",
     {"en": (("All logging must go through the structured logger, no print statements.",
              "Log only through the structured logger."),
             ("If something needs to be logged, it goes to the structured logger and nowhere else.",
              "I don't want to see a single print in this code; use the structured logger.")),
      "de": (("Alles Logging über den strukturierten Logger, keine print-Aufrufe.",
              "Nur über den strukturierten Logger loggen."),
             ("Wenn etwas geloggt wird, dann über den strukturierten Logger.",
              "Bitte kein einziges print, nur strukturiertes Logging.")),
      "es": (("Todo el logging va por el logger estructurado, nada de print.",
              "Registra solo con el logger estructurado."),
             ("Si hay que registrar algo, va al logger estructurado.",
              "No quiero ver ni un print; usa el logger estructurado."))}),
)


def rule(rng: random.Random, index: int, language: str, split: Split) -> tuple[str, str]:
    """(wording, regex) of rule ``index`` drawn from ``split``."""
    regex, langs = RULES[index]
    trained, held_out = langs[language]
    return rng.choice(trained if split == "trained" else held_out), regex


# How a failed command's output carries its error (the error text itself comes from the language).
ERROR_SHAPES: dict[Split, tuple[str, ...]] = {
    "trained": ("exit-tail", "bare-error"),
    "held-out": ("mid-output", "log-prefixed"),
}


def pool(kind: str, language: str, split: Split) -> tuple[str, ...]:
    """The wordings of ``kind`` in ``language`` that ``split`` may draw from."""
    trained, held_out = _POOLS[kind][language]
    return trained if split == "trained" else held_out


def languages(kind: str) -> tuple[str, ...]:
    """The languages ``kind`` has wordings in."""
    return tuple(_POOLS[kind])


def kinds() -> dict[str, dict[str, tuple[int, int]]]:
    """kind -> language -> (trained, held-out) counts: what the report and the tests check."""
    return {kind: {lang: (len(t), len(h)) for lang, (t, h) in langs.items()} for kind, langs in _POOLS.items()}


def word(rng: random.Random, kind: str, language: str, split: Split, **values: str) -> list[str]:
    """One wording of ``kind`` drawn by ``rng`` from ``split``, filled; a wording in several messages
    (a decision and its later reason, a proposal and the agreement) comes back as several texts."""
    template = rng.choice(pool(kind, language, split))
    if "r" in values:
        values.setdefault("R", values["r"][:1].upper() + values["r"][1:])
    return [part.strip().format(**values) for part in template.split("||")]


def error_output(rng: random.Random, split: Split, command: str, error: str, exit_code: int) -> str:
    """A failed command's output with ``error`` in it, in one of ``split``'s shapes."""
    shape = rng.choice(ERROR_SHAPES[split])
    noise = [f"NOTICE:  relation \"stage_{i}\" already exists, skipping" for i in range(rng.randint(4, 7))]
    if shape == "exit-tail":
        return f"$ {command}\nBEGIN\n{error}\n\nCommand exited with code {exit_code}"
    if shape == "bare-error":
        return f"{command.split()[0]}: {error}"
    if shape == "mid-output":
        return "\n".join(["BEGIN", "CREATE TABLE", error, "ROLLBACK", *noise,
                          f"\nCommand exited with code {exit_code}"])
    stamp = "2026-12-04 10:12:0"
    return "\n".join([f"{stamp}1 [migrate] applying {command.split()[-1]}", f"{stamp}2 [migrate] {error}",
                      f"{stamp}3 [migrate] rolled back", f"{stamp}3 [migrate] exit status {exit_code}"])
