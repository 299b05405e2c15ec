import json, os, sys, hashlib, random

def report(run_id, scenario="", valid=True, flags=(), ss=None, life=None, ttft95=None, tpot95=None,
           startup=None, release=None, tput=None, goodput=None, tokens=150000, started=1000, failed=10,
           formal_dur=100.0, lat50=None, per_req=None, good_j=None):
    succeeded = started - failed
    def stage(s, e, en):
        return {"start": s, "end": e, "duration_seconds": e - s, "energy_joules": en,
                "avg_power_watts": (en / (e - s)) if en is not None else None}
    formal_j = None if life is None or startup is None or release is None else life * tokens - startup - release
    r = {
        "run_id": run_id, "valid": valid,
        "flags": [{"code": c, "message": m, "excluding": x} for c, m, x in flags],
        "stages": {
            "idle": stage(1000.0, 1020.0, 2000.0),
            "startup": stage(1020.0, 1080.0, startup * 0.8 if startup else None),
            "warmup": stage(1080.0, 1090.0, startup * 0.2 if startup else None),
            "formal": stage(1090.0, 1090.0 + formal_dur, formal_j),
            "release": stage(1090.0 + formal_dur, 1120.0 + formal_dur, release),
        },
        "energy": {"startup_joules": startup, "formal_joules": formal_j, "release_joules": release,
                   "lifecycle_joules": None if formal_j is None else startup + formal_j + release},
        "release": {"closed": not any(c == "release_not_closed" for c, _, _ in flags)},
        "requests": {"started": started, "succeeded": succeeded, "failed": failed, "error_rate": failed / started},
        "tokens": {"formal_output": tokens, "formal_input": tokens * 3},
        "throughput_tokens_per_second": tput,
        "avg_gpu_power_watts": 450.0,
        "full_lifecycle_joules_per_token": life,
        "steady_state": {"reached": ss is not None, "reason": "" if ss is not None else "cv never below 0.03",
                         "first_request": 120 if ss else None, "last_request": succeeded - 1 if ss else None,
                         "start": 1100.0 if ss else None, "end": 1090.0 + formal_dur if ss else None,
                         "energy_joules": ss * tokens * 0.8 if ss else None,
                         "output_tokens": int(tokens * 0.8) if ss else None, "joules_per_token": ss,
                         "window": 100, "windows": 3, "cv_threshold": 0.03},
        "latency": {"ttft_seconds": {"p50": ttft95 / 2 if ttft95 else None, "p90": None, "p95": ttft95, "p99": None},
                    "tpot_seconds": {"p50": None, "p90": None, "p95": tpot95, "p99": None},
                    "latency_seconds": {"p50": lat50, "p90": None, "p95": None, "p99": None}},
        "goodput": {"ttft_slo_seconds": 0.5, "tpot_slo_seconds": 0.035,
                    "good_requests": int(goodput * started) if goodput is not None else 0,
                    "ratio": goodput, "joules_per_good_token": good_j},
        "lifecycle_estimate": {"fixed_overhead_joules": None if startup is None or release is None else startup + release,
                               "per_request_joules": per_req},
        "measurement": {"energy_source": "counter", "sample_interval_seconds": 0.1, "coverage_ratio": 0.999,
                        "boundary": "GPU board energy only"},
        "scenario": scenario,
        "generated_by": "fixture",
    }
    return r

def requests(n, empty=0, repeated=0, short=0, with_hash=True, with_max=True, seed=1):
    rnd = random.Random(seed)
    out = []
    t = 1090.0
    for i in range(n):
        kind = "ok"
        if i < empty: kind = "empty"
        elif i < empty + repeated: kind = "rep"
        elif i < empty + repeated + short: kind = "short"
        toks = {"ok": 150, "empty": 0, "rep": 150, "short": 40}[kind]
        text = {"ok": "output %d" % i, "empty": "", "rep": "the the the", "short": "short %d" % i}[kind]
        rec = {"phase": "formal", "slot": i % 8, "send_time": t, "first_token_time": t + 0.1, "end_time": t + 3.0,
               "ttft_seconds": 0.1, "latency_seconds": 3.0, "tpot_seconds": 0.019, "output_tokens": toks,
               "input_tokens": 550, "tokens_source": "usage", "success": True, "error": "",
               "finish_reason": "length" if kind in ("ok", "rep") else "stop", "itl_seconds": []}
        if with_hash:
            rec["output_hash"] = hashlib.sha256(text.encode()).hexdigest()[:16]
        if with_max:
            rec["max_tokens"] = 150
        out.append(rec)
        t += 0.1
    # a warm-up request and a failed one, never counted
    out.insert(0, dict(out[0], phase="warmup", output_tokens=0))
    out.append({"phase": "formal", "slot": 0, "send_time": t, "end_time": t + 1, "latency_seconds": 1.0,
                "output_tokens": 0, "input_tokens": 550, "tokens_source": "usage", "success": False,
                "error": "HTTP 503", "finish_reason": "", "itl_seconds": []})
    if repeated:  # a repeated output needs its first occurrence too: the first 'rep' is not counted
        pass
    return out

def write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")

def ignore_eos_manifest(d, name):
    """The run forced its lengths (extras.ignore_eos): an early stop is short."""
    write(f"{d}/runs/{name}/manifest.json", {"run_id": name, "status": "completed",
          "config": {"extras": {"ignore_eos": True}}})

def write_jsonl(path, recs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")

RUL = "release_not_closed", "release did not come back to baseline within 10m", True

def choose(d):
    R = lambda name, **kw: write(f"{d}/runs/{name}/report.json", report(name, **kw))
    R("vllm-tp1", scenario="llama8b", ss=0.30, life=0.45, ttft95=0.20, tpot95=0.030, startup=20000.0, release=3000.0, tput=1500.0, goodput=0.97, good_j=0.47)
    write_jsonl(f"{d}/runs/vllm-tp1/requests.jsonl", requests(40))
    R("vllm-tp2", scenario="llama8b", ss=0.35, life=0.40, ttft95=0.12, tpot95=0.020, startup=35000.0, release=4000.0, tput=2400.0, goodput=0.99, good_j=0.41)
    write_jsonl(f"{d}/runs/vllm-tp2/requests.jsonl", requests(40, empty=2, repeated=3, short=4))
    ignore_eos_manifest(d, "vllm-tp2")
    R("sglang-tp1", scenario="llama8b", ss=0.32, life=0.50, ttft95=0.25, tpot95=0.032, startup=22000.0, release=3000.0, tput=1400.0, goodput=0.95, good_j=0.53)
    R("sglang-tp2", scenario="llama8b", ss=0.28, life=0.60, ttft95=0.30, startup=21000.0, release=3000.0, tput=1300.0)
    write_jsonl(f"{d}/runs/sglang-tp2/requests.jsonl", requests(20, short=5, with_hash=False, with_max=False))
    ignore_eos_manifest(d, "sglang-tp2")
    R("tgi-tp1", scenario="llama8b", valid=False, flags=[RUL], ss=0.10, life=0.20, ttft95=0.05, tpot95=0.01, startup=5000.0, release=1000.0, tput=9000.0, goodput=1.0)
    # capacity sweep
    # closed-loop concurrency sweep, consistent with Little's law: rate = C / W
    for c, lat, ttft, tpot, gp in [(1, 2.0, 0.05, 0.012, 1.0), (4, 2.4, 0.09, 0.015, 1.0),
                                   (16, 3.5, 0.21, 0.022, 0.99), (64, 8.0, 0.90, 0.051, 0.62)]:
        name = f"sweep-c{c}"
        dur = 990 / (c / lat)
        write(f"{d}/sweep/{name}/report.json", report(name, scenario="sweep", ss=0.3, life=0.5, ttft95=ttft, tpot95=tpot,
              startup=20000.0, release=3000.0, tput=150000 / dur, goodput=gp, formal_dur=dur, lat50=lat,
              per_req=45.0 - c * 0.5))
        if c != 4:  # one point without its archive
            write(f"{d}/sweep/{name}/manifest.json", {"run_id": name, "status": "completed",
                  "load": {"mode": "closed", "concurrency": c, "achieved_rate": c / lat, "client_cpu_ratio": 0.01}})
    # diff
    base = dict(ss=0.30, life=0.45, ttft95=0.20, tpot95=0.030, startup=20000.0, release=3000.0, tput=1500.0, goodput=0.97, good_j=0.47)
    write(f"{d}/diff/before.json", report("nightly-1", **base))
    write(f"{d}/diff/after-ok.json", report("nightly-2", **dict(base, ss=0.31, tput=1480.0, ttft95=0.18)))
    write(f"{d}/diff/after-bad.json", report("nightly-3", **dict(base, ss=0.33, tput=1380.0, goodput=None, failed=20)))
    write(f"{d}/diff/after-invalid.json", report("nightly-4", valid=False, flags=[RUL], **base))

def compare(d):
    R = lambda name, **kw: write(f"{d}/reports/{name}.json", report(name, **kw))
    common = dict(ttft95=0.2, tpot95=0.03, startup=20000.0, release=3000.0, tput=1500.0, goodput=0.97)
    R("llama8b-a", scenario="llama8b", ss=0.30, life=0.45, tokens=150000, **common)
    R("llama8b-b", scenario="llama8b", ss=0.32, life=0.47, tokens=155000, **common)
    R("llama8b-c", scenario="llama8b", ss=0.31, life=0.52, tokens=148000, **common)
    R("qwen7b-a", scenario="qwen7b", ss=0.26, life=0.50, tokens=150000, **common)
    R("qwen7b-b", scenario="qwen7b", ss=0.28, life=0.54, tokens=152000, **common)
    R("mistral7b-a", scenario="mistral7b", ss=0.40, life=0.48, tokens=160000, **common)
    R("mistral7b-bad", scenario="mistral7b", valid=False, flags=[("steady_state_not_reached", "cv never below 0.03 over 3 windows", True)], ss=None, life=0.9, tokens=100000, **common)
    write_jsonl(f"{d}/reports/requests-dummy.jsonl", [])
    R("phi3-short", scenario="phi3", ss=0.20, life=0.70, tokens=100000, **common)

compare(sys.argv[2]) if sys.argv[1] == "compare" else choose(sys.argv[2])
