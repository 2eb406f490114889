"""Checks `mlperfc audit`'s closed-division rules against the official MLPerf checker.

The audit's rule table (compiler/Audit/ClosedRules.cpp) restates what the checker's
closed_<benchmark>.yaml (mlperf-logging, training 6.0.0) requires of the logged
hyperparameters. For the shipped benchmark declarations and for variants that each break one
rule, this runs the audit (--json), evaluates the checker's own CHECK and POST expressions on
the declaration's values under the keys a run logs them with, and requires the two verdicts
to agree rule by rule. Usage: audit_rules.py --mlperfc BIN --models DIR --work DIR
"""
import argparse
import json
import math
import os
import subprocess
import sys

import mlperf_logging
import yaml

RULESET = os.path.join(os.path.dirname(mlperf_logging.__file__), "compliance_checker",
                       "training_6.0.0")

# The audit rule that covers each logged key.
RULE_OF_KEY = {
    "opt_name": "optimizer",
    "opt_adamw_beta_1": "adamw.beta1",
    "opt_adamw_beta_2": "adamw.beta2",
    "opt_adamw_epsilon": "adamw.epsilon",
    "opt_adamw_weight_decay": "adamw.weight_decay",
    "opt_gradient_clip_norm": "clip.max_norm",
    "opt_base_learning_rate": "lr_schedule",
    "opt_learning_rate_decay_steps": "lr_schedule",
    "opt_learning_rate_decay_schedule": "lr_schedule",
    "max_steps": "lr_schedule",
    "eval_samples": "eval.samples",
    "max_sequence_length": "batch.seq_len",
    "lora_rank": "mllog.lora_rank",  # lora_alpha 32 is the rules' (the checker has no CHECK)
}


def checker_verdicts(benchmark, declared, sizes_apply):
    """Per audit rule, whether every checker CHECK of its keys passes on `declared`."""
    entries = yaml.safe_load(open(os.path.join(RULESET, f"closed_{benchmark}.yaml")))
    state, verdicts = {}, {}
    for entry in entries:
        key = entry["KEY"]["NAME"]
        if key not in declared:
            continue
        v = {"value": declared[key], "metadata": {}}
        check = entry["KEY"].get("CHECK")
        rule = RULE_OF_KEY.get(key)
        if isinstance(check, str) and rule and (sizes_apply or key != "max_sequence_length"):
            ok = bool(eval(check, {"math": math}, {"v": v, "s": state}))
            verdicts[rule] = verdicts.get(rule, True) and ok
        post = entry["KEY"].get("POST")
        if post:
            exec(post, {"math": math}, {"v": v, "s": state})
    return verdicts


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    return result


def audit(mlperfc, model, work, name, tiny=None):
    plan = os.path.join(work, name + ".pb")
    compiled = run([mlperfc, "compile", model, "-o", plan])
    if compiled.returncode != 0:
        sys.exit(f"{name}: compile failed:\n{compiled.stderr}")
    command = [mlperfc, "audit", model, plan, "--json"] + (["--tiny", tiny] if tiny else [])
    result = run(command)
    if result.returncode not in (0, 1):
        sys.exit(f"{name}: audit could not run (status {result.returncode}):\n{result.stderr}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlperfc", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    cases = [
        ("llama31_8b", os.path.join(args.models, "llama31_8b.mlir"), None),
        ("llama31_405b", os.path.join(args.models, "llama31_405b.mlir"), None),
        ("llama2_70b_lora", os.path.join(args.models, "llama2_70b_lora.mlir"), None),
    ]
    # Variants that each break one fixed value (on the tiny declarations, which keep the
    # benchmark's hyperparameters).
    variants = [(("llama3", "llama31_8b_tiny"), settings) for settings in (
        "beta1=0.85", "beta2=0.99", "adam_eps=1e-08", "weight_decay=0.05", "clip=0.5",
        "max_steps=1000", "eval_samples=512", "lr=0.001")]
    variants += [(("llama3", "llama31_405b_tiny"), settings)
                 for settings in ("lr=0.0001", "warmup_steps=100", "gbs=64")]
    variants += [(("llama2-lora", "llama2_70b_lora_tiny"), settings)
                 for settings in ("lora_rank=8", "lora_alpha=16", "clip=1.0", "weight_decay=0.1")]
    for (family, preset), settings in variants:
        name = preset + "-" + settings.replace("=", "-")
        path = os.path.join(args.work, name + ".mlir")
        emitted = run([args.mlperfc, "emit-model", family, "--preset", preset, "--set", settings,
                       "-o", path])
        if emitted.returncode != 0:
            sys.exit(f"{name}: emit-model failed:\n{emitted.stderr}")
        cases.append((name, path, path))

    compared = 0
    for name, model, tiny in cases:
        report = audit(args.mlperfc, model, args.work, name, tiny)
        expected = checker_verdicts(report["benchmark"], report["declared_hyperparameters"],
                                    report["benchmark_configuration"])
        failing = {v["rule"] for v in report["violations"]}
        for rule, checker_ok in sorted(expected.items()):
            audit_ok = rule not in failing
            if audit_ok != checker_ok:
                sys.exit(f"{name}: the checker says {rule} {'holds' if checker_ok else 'fails'}, "
                         f"the audit says it {'holds' if audit_ok else 'fails'}: "
                         f"{[v for v in report['violations'] if v['rule'] == rule]}")
            compared += 1
        broken = sorted(rule for rule, ok in expected.items() if not ok)
        print(f"{name}: {len(expected)} rules agree with the checker"
              + (f" (both flag {', '.join(broken)})" if broken else " (both pass)"))
    print(f"audit rules agree with the official checker: {len(cases)} declarations, "
          f"{compared} rule verdicts")


if __name__ == "__main__":
    main()
