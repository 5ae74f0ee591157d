#!/usr/bin/env python3
"""Reference renders of the MoE families' chat templates (issue 19).

Renders every template in this folder over ../conversations.json (and the
harmony-specific conversations in extra_conversations.json for gpt-oss) with
Python Jinja2 set up as transformers' apply_chat_template sets it up (see
../REFERENCE-SOURCES.md, "Rendering settings"), and writes expected.json.
This is Jinja2's output, not the Go engine's. Run: python3 render.py
(python3 render.py --check-base first shows this setup reproduces the 204
base cases of ../expected.json byte for byte).
"""
import datetime
import json
import os

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = datetime.datetime(2025, 3, 14, 9, 26, 53)

# template file -> (bos_token, eos_token), from each model repository's
# tokenizer_config.json; None = not passed.
TEMPLATES = {
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "moonshotai-Kimi-K2.jinja": ("[BOS]", "[EOS]"),
    "GLM-4.6.jinja": (None, "<|endoftext|>"),
}

# Extra cases: (template, conversation, add_generation_prompt, kwargs).
OFF_PROMPT = ["multi_turn", "ends_with_assistant", "reasoning_last_assistant", "tool_call_roundtrip"]
KWARG_CASES = [
    ("openai-gpt-oss-120b.jinja", "single_user", True, {"reasoning_effort": "high"}),
    ("openai-gpt-oss-120b.jinja", "multi_turn", True, {"reasoning_effort": "low"}),
    ("deepseek-ai-DeepSeek-V3.1.jinja", "single_user", True, {"thinking": True}),
    ("deepseek-ai-DeepSeek-V3.1.jinja", "reasoning_field", True, {"thinking": True}),
    ("GLM-4.6.jinja", "single_user", True, {"enable_thinking": False}),
    ("GLM-4.6.jinja", "multi_turn", True, {"enable_thinking": False}),
]


class AssistantTracker(Extension):
    """transformers' {% generation %} tag: renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return NOW.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, conv, gen, bos, eos, kwargs):
    tmpl = env.from_string(source)
    ctx = {"messages": conv["messages"], "tools": conv.get("tools"), "documents": None,
           "add_generation_prompt": gen}
    if bos is not None:
        ctx["bos_token"] = bos
    if eos is not None:
        ctx["eos_token"] = eos
    ctx.update(kwargs)
    return tmpl.render(**ctx)


def main():
    with open(os.path.join(HERE, "..", "conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    with open(os.path.join(HERE, "extra_conversations.json"), encoding="utf-8") as f:
        extra = json.load(f)
    by_id = {c["id"]: c for c in convs + extra}
    plan = []
    for name in TEMPLATES:
        for c in convs:
            plan.append((name, c["id"], True, {}))
        for cid in OFF_PROMPT:
            plan.append((name, cid, False, {}))
    for c in extra:
        for name in c["templates"]:
            plan.append((name, c["id"], True, {}))
            plan.append((name, c["id"], False, {}))
    plan += KWARG_CASES
    env = environment()
    out = []
    for name, cid, gen, kwargs in plan:
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            source = f.read()
        bos, eos = TEMPLATES[name]
        conv = by_id[cid]
        rid = "%s__%s__%s" % (name[:-len(".jinja")], cid, "gen" if gen else "nogen")
        if kwargs:
            rid += "__" + "_".join("%s=%s" % (k, json.dumps(v)) for k, v in kwargs.items())
        rec = {"id": rid, "template": name, "conversation": cid, "add_generation_prompt": gen,
               "bos_token": bos, "eos_token": eos, "kwargs": kwargs, "now": NOW.isoformat(),
               "messages": conv["messages"], "tools": conv.get("tools")}
        try:
            rec["rendered"] = render(env, source, conv, gen, bos, eos, kwargs)
        except jinja2.exceptions.TemplateError as e:
            kind = "raise_exception" if type(e) is jinja2.exceptions.TemplateError else "runtime"
            rec.update(error=str(e), error_type=type(e).__module__ + "." + type(e).__name__, error_kind=kind)
        except Exception as e:  # the template's own failure on this input
            rec.update(error=str(e), error_type=type(e).__module__ + "." + type(e).__name__, error_kind="runtime")
        out.append(rec)
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d cases, %d raising (jinja2 %s)" % (len(out), sum("error" in r for r in out), jinja2.__version__))


def check_base():
    """Re-renders the 204 base cases of ../expected.json with this setup."""
    with open(os.path.join(HERE, "..", "expected.json"), encoding="utf-8") as f:
        base = json.load(f)
    env, differ = environment(), 0
    for r in base:
        with open(os.path.join(HERE, "..", r["template"]), encoding="utf-8") as f:
            source = f.read()
        conv = {"messages": r["messages"], "tools": r["tools"]}
        try:
            same = render(env, source, conv, r["add_generation_prompt"], r["bos_token"],
                          r["eos_token"], r["kwargs"]) == r.get("rendered")
        except Exception as e:  # noqa: BLE001 - compared with the recorded error
            same = str(e) == r.get("error")
        differ += not same
    print("%d of %d base cases reproduced" % (len(base) - differ, len(base)))
    return differ == 0


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--check-base"]:
        sys.exit(0 if check_base() else 1)
    main()
