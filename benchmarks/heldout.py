"""roofcalc against published measurements it was never tuned to: the held-out set.

    python benchmarks/heldout.py            # its tables and summaries (docs/validation.md, "Held out")

These cases were collected from sources, engines and GPUs that benchmarks/published.py does not hold, and
written down here (with each engine's way of running, below) before roofcalc was ever run on them: no
default, fitted parameter or rule was chosen while looking at them, and none may be. A case that leads to a
change becomes "seen" and moves to benchmarks/published.py. One exception, made openly: the range's widths are
calibrated on the first twenty-four sets as they are run (benchmarks/calibrate.py, CALIBRATION_ONE and
CALIBRATION_SEVERAL below), so for the range those sets are seen; their first-run figures stand in
docs/validation.md, and each later set is first run before it joins them. Every case runs as published.py runs its own:
the catalog's datasheet roof, the default efficiencies and host costs, the fitted kernel costs where the GPU
has them. Where a source leaves a length out, the case says what was assumed.

How each engine runs a decode step, from its own docs and code (fixed before the first run):
* vLLM (buildkite CI, 2024; the premAI runs of January 2024): CUDA graphs for decode (`--enforce-eager`
  defaults to False), a paged cache written in place: `cuda-graph`. vLLM of October 2023 (llm-perf-bench's
  commit acbed3e) predates its CUDA graphs: `fused`.
* gpt-fast: `torch.compile(mode="reduce-overhead")`, CUDA graphs, a static cache written in place: `cuda-graph`.
* MLC LLM (2023), TensorRT-LLM and Optimum-Nvidia (TensorRT engines, January 2024), DeepSpeed-FastGen,
  llama.cpp of January 2024 (before its CUDA graphs): their own fused kernels, one launch each: `fused`.

A second set (CASES_2, CASES_2_MULTI) was transcribed on 2026-12-02 from three more sources and committed
before roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* LMDeploy's TurboMind v0.1.0a1 (C++ engine, its own fused CUDA kernels, no CUDA graphs at that version, a
  paged cache written in place): `fused`; fp16 throughout (the page's "FP16"; TurboMind's KV cache is fp16 by
  default). Its static benchmark's throughput is output tokens/s of the whole batch (per GPU: over TP); its
  first-token latency at batch 1 is the prefill. Rows with batch 64 and 2,048 + 2,048 tokens are left out (a
  116 s first-token maximum: requests queued for KV-cache room, not a static batch).
* TensorRT-LLM on the H200 (v0.5 and v0.7 blogs): `fused`, the FP8 recipe of benchmarks/published.py (the blogs
  say "FP8" and not the KV cache's dtype), and TensorRT-LLM's own kernel tables (published.py's rule for
  TensorRT-LLM cases, which the first held-out set predates). The blogs' output tokens/s per GPU include the
  prefill (their formula: output length x batch / total latency / TP).
* gpt-fast's Mixtral (mixtral-moe/README.md, a file apart from the README published.py and the first set
  read): `cuda-graph`, context 105 as the first set's gpt-fast cases; its int8 is weight-only with one scale
  per output channel, given here as one fp16 scale per 4,096 inputs (the scales are 0.05 % of the bytes). The
  dequantizing factor of int8 weights was set from gpt-fast's own int8 figures on Llama-2-7B (published.py's
  note): its int8 cases here are of the engine that factor came from, and are marked so.
Its LMDeploy first-token rows were re-read after its first run (RE_READ_2, below: seen, reported apart).
The H100-vs-A100 GPT-J rows of the same TensorRT-LLM blogs were left out: GPT-J is not in the catalog and
the rows are the v0.5 performance tables published.py already holds for other models.

A third set (CASES_3, CASES_3_MULTI) was transcribed on 2026-12-03 from six sources none of the sets above
holds, and committed before roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* NVIDIA NeMo Framework's Llama-2 inference table (TensorRT-LLM underneath, served by Triton): `fused`,
  TensorRT-LLM's kernel tables (the rule for TensorRT-LLM cases), bf16 (the table does not say; NeMo's deploy
  page gives Llama-2 as bfloat16 into TensorRT-LLM). A row is one static batch's whole request, 128 prompt
  tokens and 20 generated: output tokens/s per GPU = batch x 20 / latency / TP. The table's Llama-2-13B rows
  were left out: at 16 bits they run faster than reading the weights allows (142.5 ms for 20 tokens on one
  A100), so they are not what the table says they are.
* NVIDIA's blog on H100 and TensorRT-LLM (December 2023): Llama-2-70B on a DGX H100's eight GPUs, v0.5.0,
  batch 1, 2,048 in and 128 out, 1.7 s: `fused`, TensorRT-LLM's tables, published.py's FP8 recipe (the post
  says FP8; the KV cache's dtype is not given), TP 8 (the post names eight GPUs, not the split).
* AutoAWQ 0.1.6 on an RTX 4090 (its README's table, examples/benchmark.py): AWQ 4-bit weights in groups of
  128 with fp16 scales, fp16 activations and KV cache, its fused layers (its own kernels, a pre-allocated
  cache written in place, no CUDA graphs): `fused`. Its prefill tokens/s is the prompt's tokens over the
  prefill's time (TTFT = batch x prompt / rate); its decode tokens/s is generated tokens x batch over the whole
  decode, so a step is batch / rate at the middle context, prompt + generated / 2. "Mistral 7B" of December
  2023 is Mistral-7B-v0.1.
* TinyChat (mit-han-lab/llm-awq) on an RTX 4090, batch 1, per-token latency of the generation: its AWQ 4-bit
  kernels (groups of 128) are `fused`; its FP16 baseline is Hugging Face's own implementation: `hf-eager` with
  transformers' growing cache (`concat`). Lengths are not given (Llama-2-7B's prompt is "over 500 tokens"):
  context 640 assumed for both models.
* torchao's quantization README (pytorch/ao, _models/llama/generate.py, gpt-fast's generate): decode compiled
  with mode "reduce-overhead" (CUDA graphs, a static cache written in place): `cuda-graph`; batch 1, the
  script's default prompt ("Hello, my name is", 6 tokens) and 100 new tokens (its default in the file read):
  context 56. "A single A100": the 80 GB SXM assumed (the README does not say; torchao's AWQ README names
  one). int4wo-64 is int4 in groups of 64; int8wo is per output channel, given as one scale per 4,096
  inputs as the second set's gpt-fast int8; the int8 factor's engine lineage (gpt-fast) is marked.
ExLlamaV2's README table (EXL2 at 2.5 and 4.0 bits per weight on average, lengths not given) was left out:
its mixed bit widths are not a weight format roofcalc has.

A fourth set (CASES_4, CASES_4_MULTI) was transcribed on 2026-12-03 from five sources none of the sets above
holds (a helper searched and copied the figures; nothing was run), and committed before roofcalc ran on any of
it; the same rules hold, and these choices were fixed with it:
* TensorRT-LLM v0.9.0's performance.md ("All data was generated using version 0.9.0"; gptSessionBenchmark,
  static batches, paged KV cache off): `fused`, TensorRT-LLM's kernel tables, published.py's FP8 recipe on the
  H200, H100 and L40S (the doc's quant_algo FP8 and kv_cache_quant_algo FP8), fp16 on the A100 (80 GB SXM
  assumed: the doc does not say). Throughput is output tokens/s per GPU of a static batch, prefill included;
  its batch-1 first-token latency is the context phase alone (one output token, which the context phase
  yields: the rule the first-token tables of published.py follow): a prefill. "Mistral 7B" is
  Mistral-7B-v0.1 and "Mixtral 8x7B" Mixtral-8x7B-v0.1 (the doc prints no config for them).
* NVIDIA NIM 1.8.0's benchmarking page, Llama-3.3-70B-Instruct FP8 on two H100 (SXM assumed), TP 2,
  concurrency 1 (a single stream; the higher concurrencies are served, not static, and left out): TensorRT-LLM
  underneath (assumed: NIM's fp8 TP 2 profiles), `cuda-graph` (TensorRT-LLM's default of 2025), its tables,
  the FP8 recipe (KV fp8 assumed). Llama-3.3-70B's config is Llama-3.1-70B's sizes. Its inter-token latency
  is a decode step at the middle of the generation; its TTFT a prefill (a few ms of HTTP and tokenizing in it).
* Jan's "Benchmarking NVIDIA TensorRT-LLM" (2024-04-29), batch 1 on an RTX 4090 and 3090: TensorRT-LLM 0.7.1
  int4 AWQ (groups of 128 assumed) with its tables, and llama.cpp 15499eb (March 2024, before its CUDA graphs)
  Q4_K_M given as int4 in groups of 32 (4.5 bits a weight, as the 4.06 GB file of 7.24 B parameters is):
  `fused`. "input_len 2048, output_len 512": a step at context 2,304. Mistral-7B-Instruct-v0.2 has
  Mistral-7B-v0.1's sizes (its window, which v0.2 drops, does not bind at 2,304).
* Hamel Husain's "Optimizing latency" notebook (July 2023), Llama-2-7B on an RTX A6000, batch 1, about 20
  prompt tokens and up to 200 generated: a step at context 120 = 1 / tokens per second. CTranslate2 (its own
  C++ kernels), vLLM of July 2023 (no CUDA graphs yet) and MLC LLM (q4f16_1: int4 in groups of 32): `fused`.
  CTranslate2's int8 (int8 weights, per output channel) is given as one fp16 scale per 4,096 inputs, as the
  second set's gpt-fast int8.
* Hugging Face Optimum's GPTQ benchmark README (AutoGPTQ 0.5.0, transformers 4.35), Llama-2-13B on one A100
  SXM4 80GB, prompts of 512 tokens, one new token: a prefill under `hf-eager`; its GPTQ row is int4 in groups
  of 128 (exllamav2, which dequantizes at this many rows).
A fifth set (CASES_5, CASES_5_MULTI) was transcribed on 2026-12-03 from nine sources none of the sets above
holds (a helper searched and copied the figures with a quote of each; nothing was run), and committed before
roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* ExLlamaV2's README (turboderp/exllamav2 @ 01d01a1, its GPTQ rows only: 4-bit, groups of 128, no act-order)
  and ExLlama's final README (turboderp/exllama @ 0558dea, 2023-09-12, test_benchmark_inference.py), on an RTX
  4090, batch 1: their own CUDA kernels, no CUDA graphs: `fused`, fp16 activations and cache. "Llama 7B/13B"
  has Llama-2-7b/13b's sizes. ExLlama's "Best" is 128 tokens generated from an empty context (a step at context
  64), its "Worst" the last 128 of a 2,048-token context (context 1,984), its "Prompt" a prefill of 1,920 tokens
  (2,048 - 128). ExLlamaV2's quick tests give no lengths: context 256 assumed.
* LMDeploy's W4A16 guide (InternLM/lmdeploy @ 8e8629d, 2023-08-14, profile_generation.py on an RTX 4090, batch
  1, 1 prompt token, 512 generated): a step at context 257; TurboMind (its own fused kernels, no CUDA graphs)
  with AWQ 4-bit in groups of 128: `fused`; the same table's MLC LLM (version not given) as MLC's q4f16_1
  (int4 in groups of 32, the first set's reading of MLC): `fused`.
* MLC's blog on multi-GPU inference (2023-10-19): Llama-2-70B 4-bit on two RTX 4090s, one stream, 34.5 tok/s:
  q4f16_1 assumed, TP 2, `fused`, context 256 assumed (not given).
* Qwen2.5's speed benchmark (QwenLM/Qwen2.5 @ a912d23, docs/source/benchmark/speed_benchmark.rst; one A100
  80GB, SXM assumed): batch 1, 2,048 generated tokens, speed = 2,048 / the whole request's time (its script),
  so a request case, prefill included. vLLM 0.6.3 by default runs CUDA graphs: `cuda-graph`; its "Setting 1"
  and "Setting 2" rows set enforce_eager=True: `fused`. HF Transformers 4.46 (flash-attention 2): `hf-eager`
  with transformers' growing cache. bf16; GPTQ-Int4 is int4 in groups of 128 (Qwen's GPTQ checkpoints).
  Multi-GPU rows are one stream over TP ranks (tokens/s per GPU: over TP).
* Oracle's blog on Llama-3.1-405B on eight MI300X (2024-10-10): vLLM (ROCm) benchmark_latency, static
  batches of 1, 8 and 64, 128 in and 128 out, TP 8 assumed ("All eight GPUs were assigned"): `cuda-graph`
  (vLLM's default, HIP graphs), Meta's FP8 checkpoint: fp8 weights with one scale per output channel
  (`fp8-ch`), bf16 between and in the KV cache (vLLM's default cache dtype). Output tokens/s per GPU = batch x
  128 / latency / 8.
* AMD's ROCm performance-results page (the rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006 snapshot): Llama-3.1-70B
  FP8 with an FP8 KV cache (amd/Llama-3.1-70B-Instruct-FP8-KV) on eight MI300X, TP 8, batch 1, 128 in, 2,048 out,
  15.882 s: `cuda-graph`, published.py's FP8 recipe (per-tensor fp8 weights and activations, fp8 KV).
* GPUStack's Performance Lab, Qwen3-8B on one H100 SXM (gpustack/gpustack @ 1dbc3b8): `vllm serve` v0.11.0 at
  concurrency 1, ShareGPT prompts of 233 tokens and 221 generated on average: its median TPOT, a step at
  context 344 (233 + 221 / 2), `cuda-graph`, bf16. Its TTFT is left out: through the HTTP server, tokenizer and
  scheduler it is not a prefill.
* llama.cpp on CUDA (a llama-bench report on an RTX 3080, build 93bc383 of August 2024, in
  dmatora/LLM-inference-speed-benchmarks issue 12; and the master column of an RTX 4090 table in llama.cpp pull
  request #12183, March 2025): Q4_K_M as int4 in groups of 32 (the fourth set's rule); token generation runs
  CUDA graphs since May 2024 (llama.cpp #6766): `cuda-graph`; prompt processing `fused`. The 3080 report's
  lengths are llama-bench's defaults (pp512, tg128: a step at context 64, assumed). The 4090 table's "llama 3B"
  is taken as Llama-3.2-3B (assumed); its ISL 10 and 10,000 with 200 generated: steps at contexts 110 and
  10,100.
Left out: HF's SageMaker benchmark of TGI (lengths not stated, times through an HTTP endpoint), TensorRT-LLM's
DeepSeek-R1 on eight B200s (NVFP4 experts with bf16 attention: a mix of weight formats roofcalc did not
take when this set was fixed), and MLC/llm-awq rows the excluded sources already hold.

A sixth set (CASES_6, CASES_6_MULTI) was transcribed on 2026-12-04 from TensorRT-LLM's performance.md as
published.py reads it (throughput "updated for v0.6.1", L40S and first-token latency tables "from v0.5"): its
rows published.py does not hold (GPT-J 6B, LLaMA 7B, Falcon 180B), committed with the trtllm-0.6 preset and
before roofcalc ran on any of them. That preset's rule (a GQA decode reads its group's KV once per query head,
as the masked MHA kernel before XQA) was chosen on published.py's Llama-2-70B rows of the same table; Falcon
180B (232 query heads on 8 KV heads) is the check of it nobody tuned to, GPT-J and LLaMA 7B (MHA: the rule
changes nothing) of the rest. The choices fixed with it: `fused`, the `trtllm-0.6` preset's kernels (every row
is of v0.5 or v0.6.1), published.py's FP8 recipe on the H100 and the L40S, fp16 on the A100 (80 GB SXM, as
published.py); throughput is output tokens/s per GPU of a static batch, prefill included (the A100 and L40S
tables' header says "out tok/s": read per GPU, as published.py reads the A100's Llama-2-70B rows), its
first-token latency a prefill. "LLaMA 7B" has Llama-2-7B's sizes; GPT-J 6B and Falcon 180B are read from
their configs (benchmarks/configs/published, docs/configs). Where roofcalc refuses a row (a traced model
takes no fp8 KV cache) the script says so.
The same rule moves three rows of the sets above, which were run before it and are reported before and after
it in docs/validation.md: the second set's v0.5 Llama-2-70B rows on the H200 and the third set's v0.5.0 one.

A seventh set (CASES_7, CASES_7_MULTI) was transcribed on 2026-12-04 from four sources none of the sets above
holds, most of it on several GPUs, and committed before roofcalc ran on any of it; the same rules hold, and these
choices were fixed with it:
* Qwen2's speed benchmark (QwenLM/Qwen2.5 @ 5c4e69c, 2024-06-11, when the repository was QwenLM/Qwen2: an earlier
  version of the fifth set's page, other models and other runs): vLLM 0.4.2 on A100 80GB (SXM assumed), batch 1,
  2,048 generated, speed = 2,048 / end-to-end time (the fifth set's reading). vLLM's default there
  (`enforce_eager=False`): `cuda-graph`; its "[Setting 1]" (`enforce_eager=True`): `fused`. Qwen2-72B-Instruct and
  Qwen2-7B-Instruct have Qwen2.5-72B's and Qwen2.5-7B's sizes (hidden 8,192 and 3,584, 80 and 28 layers, 64/8 and
  28/4 heads, MLP 29,568 and 18,944, vocabulary 152,064; the catalog's configs are used); Qwen2-57B-A14B-Instruct
  is read from its config (benchmarks/configs/published). GPTQ-Int8 is int8 weights in groups of 128, GPTQ-Int4
  and AWQ int4 in groups of 128 (the kernels vLLM 0.4.2 chose are not stated). Taken: every BF16 row, and the
  quantized rows at input lengths 1 and 30,720 (the ends within the default max_model_len), so that one page does
  not outweigh the rest. The rows past 32k tokens need a longer max_model_len than the default, whose setting the
  page does not give (counted as written: 63,488 or 129,024 prompt tokens).
* Hugging Face's SageMaker benchmark of TGI 1.0.3 (philschmid/text-generation-inference-tests @ f020075,
  results/sagemaker.csv, the blog "Llama 2 on Amazon SageMaker a Benchmark"): one virtual user (one request at a
  time: batch 1), 50 generated tokens a request, ShareGPT prompts (lengths not stated: 128 assumed), fp16; the
  median of TGI's time per token (its inference time over the tokens generated: the prefill's share included,
  the HTTP queue not) read as a request of 128 + 50 at 1,000 / ms tokens/s. TGI 1.0.3 runs its own fused
  kernels (FlashAttention, paged attention, fused norms) without CUDA graphs: `fused`. The fifth set left this
  benchmark out for its lengths; the raw CSV gives the generated tokens and the per-token time.
* vLLM pull request #2192 (custom all-reduce, December 2023): benchmark_latency, a static batch of 64, 256 in and
  256 out, fp16 (assumed); "Llama 70B" on 4 x A100-80G read as Llama-2-70B (SXM assumed), the "after" column
  (the custom all-reduce vLLM ships from then on), with CUDA graphs (vLLM 0.2.6 on): `cuda-graph`; output
  tokens/s per GPU = 64 x 256 / latency / 4. Its "Llama 33B" row is left out (the checkpoint is not named).
* vLLM pull request #20155 (June 2025): RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8 on 4 x H100 (SXM assumed),
  TP 4, one 8,192-token prompt and one output token (0.380 s, async TP off): the prefill, `cuda-graph` (V1,
  torch.compile), fp8 weights and activations per tensor (assumed: the checkpoint's scheme was not checked),
  a bf16 KV cache.
Left out: DeepSpeed-Inference's BLOOM-176B (HF blog, 2022; transformers' BloomConfig has no tensor-parallel
plan, so roofcalc refuses --tp for it), vLLM pull request #17882 (its figure is with async TP, which roofcalc
does not model), and TensorRT-LLM's H100-vs-A100 blog (the performance.md tables the sets above read).
After the seventh set's first run the `vllm-v0` preset was written (roofcalc/engines.py, from sources outside the set); the
set's vLLM V0 rows are printed once more under it, with its host time, as seen (SEEN_7_V0).
An eighth set (CASES_8_MULTI) was transcribed on 2026-12-04 from three vLLM pull requests of January to April 2024
(vLLM 0.3.0 to 0.4.1, among the versions the `vllm-v0` preset models) and committed before roofcalc ran on any of it:
* benchmark_latency's "Avg latency" is one llm.generate() of a static batch of bs dummy prompts: a prefill of bs x
  input_len tokens, then output_len - 1 decode steps; read as a request of bs sequences, output tokens/s per GPU =
  bs x output_len / latency / TP. CUDA graphs are on (enforce_eager False in those releases), bf16 (the
  checkpoints' torch_dtype, --dtype auto), the custom all-reduce on: `cuda-graph` on vLLM's kernel tables.
  Where a batch's prompts pass max_num_batched_tokens (bs 64 x 1,000) vLLM prefilled in two steps; counted as one.
* Pull request #2542 (2024-01-22, the fused MoE kernel, in v0.3.0): Mixtral-8x7B-Instruct (Mixtral-8x7B's sizes) on
  8 x H100 (SXM assumed: the author's tuned file of #2979 names H100_80GB_HBM3), TP 8, 1,000 in, 50 out, bs 1-64,
  its "This PR" rows.
* Pull request #3240 (2024-03-06, never merged): its "master" rows, what v0.3.3 ran (the default MoE tiles: no tuned
  file for Mixtral at TP 2 on an A100 then): Mixtral-8x7B-Instruct on 2 x A100-80GB (SXM assumed), 1,000 in, 50 out.
* Pull request #4002 (2024-04-11, tuned tiles for Mixtral-8x22B, in v0.4.1): Mixtral-8x22B on A100-SXM4-80GB at TP 4
  and 8, the script's default lengths (32 in, 128 out), bs 8-32, its "with config" rows (bs 32 at TP 8 read as
  4.3906944 s, the digits the copy holds).
Left out: pull request #3692's DBRX rows (no DBRX config is at hand offline) and #3208's one row (its GPU not stated).
The set is printed twice: as every set is run (no engine host time), and under --engine vllm-v0 with its host time,
a check of that preset on rows it was not written from.
A ninth set (CASES_9, CASES_9_MULTI) was transcribed on 2026-12-04 from three GitHub threads of 2024-2025 that no set
above holds (a helper searched and copied the figures with the commands; nothing was run), and committed before
roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* vLLM pull request #23197 (2025-08-19, the RTN quantization's Marlin kernels): benchmark_latency --input-len 256
  --output-len 32 --n 1, static batches of 1-16, each figure the mean of five runs' "Avg latency", on "H100 GPUs"
  (SXM assumed). vLLM of August 2025 runs the V1 engine with CUDA graphs: `cuda-graph`, bf16, read as set 8
  reads benchmark_latency (a request of bs sequences, output tokens/s per GPU = bs x 32 / latency / TP).
  "Llama3.1-8B" is meta-llama/Llama-3.1-8B's sizes, "Llama3.3-70B" Llama-3.1-70B's (TP 4). RTN is weight-only:
  8 bits by default, 4 with RTN_NUM_BITS=4, in groups of 128 (vllm/model_executor/layers/quantization/rtn.py:
  RTN_GROUP_SIZE defaults to 128; the command sets no group size). Taken: every BF16 row, and the "new RTN"
  rows at batch 1 and 16 (the ends), so that one page does not outweigh the rest; the old RTN rows (its
  dequantize-then-matmul kernels, replaced by the pull request) are left out.
* SGLang issue #2087 (comment of 2024-11-19): sglang.bench_latency --batch-size 32 --input 1024 --output 256 on
  amd/Meta-Llama-3.1-70B-Instruct-FP8-KV --tp 8 --quantization fp8, "On H100" (SXM assumed): fp8 weights and
  activations per tensor (the checkpoint's static scales), a bf16 KV cache (--kv-cache-dtype not given: auto),
  Llama-3.1-70B's sizes. Its "Prefill. latency" (1.15925 s) is one prefill of 32 x 1,024 tokens: `fused`
  (SGLang runs no CUDA graph for a prefill); its "Decode. median latency" (0.01364 s) one decode step of 32
  sequences with CUDA graphs (SGLang's default): `cuda-graph`, at context 1,152 (1,024 + 256 / 2). Its "Total"
  is the same run and is left out.
* Tenstorrent's tt-inference-server issue #143 (2025-04-01): a GPU reference run of Qwen2.5-72B-Instruct on "2x
  H100", concurrency 1, fixed lengths, mean TPOT. The engine is not named; their GPU reference runs use vLLM's
  serving benchmark, and vLLM of April 2025 runs V1 with CUDA graphs: `cuda-graph` (assumed), TP 2 (assumed),
  bf16 (assumed), SXM (assumed); a step at context input + output / 2. Taken: the 128/128, 2,048/128 and
  8,192/128 rows (of seven, all about 31 ms). Its TTFT is left out (through an HTTP server: not a prefill).
Left out: SGLang issues #1008 and #1401 and pull request #3232 (their GPU is not stated), Tenstorrent's issue #340
(A100 of 40 or 80 GB not stated; Qwen3-1.7B's config is not at hand offline) and #379 (Llama-3.2-90B-Vision,
whose cross-attention layers a text-only request skips), vLLM pull request #12637 (a periodic log's throughput,
not a timed run).
The set is printed twice: as every set is run (vLLM's tables, no engine host time), and under its engine's preset
(`--engine vllm`, `--engine sglang`) with that preset's host time, a check of the presets on rows they were not
written from.

A tenth set (CASES_10, CASES_10_MULTI) was transcribed on 2026-12-04 from four GitHub threads of 2024-2026 that no set
above holds (a helper searched and copied the figures with a quote of each; nothing was run), and committed before
roofcalc ran on any of it, with the catalog's RTX 6000 Ada entry (its datasheet); the same rules hold, and these
choices were fixed with it:
* AutoAWQ pull request #320 (comment of 2024-01-29): the AWQ GEMM kernel's baseline rows, examples/benchmark.py on an
  A100-SXM4-80GB, batch 1, IlyasMoutawwakil/vicuna-7b-v1.5-awq-gemm (Vicuna-7B v1.5 has Llama-2-7B's sizes): the
  third set's AutoAWQ rule (int4 in groups of 128, fp16 activations and cache, its fused layers: `fused`; prefill
  = prompt / prefill tokens/s, a decode step = 1 / decode tokens/s at context prompt + generated / 2).
* llama.cpp pull request #19053 (2026-01-23), its master column (llama-bench through compare-commits.sh) on an "NVIDIA
  RTX 6000 Ada Generation": "llama 8B Q4_0" as Llama-3.1-8B's sizes (assumed; Llama-3-8B's are the same), Q4_0 as
  int4 in groups of 32 (the first set's rule); pp8096 a prefill of 8,096 tokens (`fused`), tg128 a step at context
  64 (`cuda-graph`, the fifth set's rule). Its gpt-oss-20b rows are left out (no config at hand offline), and so are
  its RTX PRO 6000 Blackwell Max-Q rows (a 300 W card the catalog does not hold).
* TensorRT-LLM issue #5929 (2025-07-10): DeepSeek-R1 FP8 on 8 x H200 (SXM assumed), TP 8 with no expert
  parallelism, v0.21.0rc2 behind trtllm-serve, measured with LLMPerf; its p50 inter-token latency at 1 and 8
  concurrent requests as a decode step at context input + output / 2 (1,600 + 300, 8,192 + 300). Its PyTorch
  backend (assumed: the issue names trtllm-serve only; DeepSeek-R1 ran on that backend alone then) ran without CUDA graphs unless configured at that version (pull request #5480 turned them on by default
  after it) and the issue gives no configuration: `fused`. DeepSeek-R1's own fp8 weights in 128 x 128 blocks
  (`fp8-b128`), bf16 between and in the KV cache (not stated: the engine's default is the model's dtype); its
  config from benchmarks/configs/published. Its TTFT is left out (through an HTTP server), and so are its NVFP4
  rows on B200 (the checkpoint is not named, and its mix of formats not stated).
* SGLang pull request #33293 (2026): ibm-granite/granite-3.1-3b-a800m-instruct, bf16, TP 1, on an H200 (SXM
  assumed), python -m sglang.benchmark.one_batch at batch 1, 128 in and 64 out, the baseline commit's medians:
  the eager prefill (`fused`: SGLang's own kernels, launched one by one), the eager decode step (`fused`, context
  128 + 32) and the CUDA-graph decode step the thread names without restating its workload (`cuda-graph`, the same
  workload assumed). Its config from benchmarks/configs/published.
Left out: TensorRT-LLM issue #1761 (chatglm3-6b: its config needs the checkpoint's own code), llama.cpp pull request
#4812 (an RTX 3090 Ti, not in the catalog), SGLang pull request #31044 (MiniMax-M2.7 on MI300X under TP 2 with EP 2:
this script runs tensor parallelism alone, and the GPU count is inferred), and threads whose GPU is not stated.
The set is printed twice, as the ninth: vLLM's tables with no engine host time, then the rows of an engine with a
preset under it (`--engine trtllm`, `sglang`, `llama.cpp`) with its host time.

An eleventh set (CASES_11, CASES_11_MULTI) was transcribed on 2026-12-04 from eight GitHub threads of 2023-2026 that
no set holds, and committed before roofcalc ran on any of it; it is the first set run after the range was
calibrated on the ten before it (benchmarks/calibrate.py), so it checks that calibration. The choices:
* SemiAnalysisAI/InferenceX issue #870 (2026-03-05): DeepSeek-R1-0528 (DeepSeek-R1's config) on 8 x H200 (SXM
  assumed), SGLang v0.5.7, TP 8, fp8 weights in 128 x 128 blocks, CUDA graphs (`cuda-graph`), KV cache bf16 (no
  --kv-cache-dtype in its recipe), 1k/1k random prompts: InferenceX's harness draws input and output lengths
  uniformly from 819 to 1,024 (mean 922), so each concurrency's mean TPOT is a decode step of that many
  sequences at context 922 + 461. Its TTFT is left out (through an HTTP server, queued). In a served run other
  requests' prefills share the steps, which a decode step does not count.
* InferenceX issue #828 (2026-03-01): gpt-oss-120b (MXFP4 experts, bf16 elsewhere) on 8, 4 and 2 H100s (SXM
  assumed), vLLM v0.15.1 (the project's recipe of that date), CUDA graphs, its TPOT (mean or median: not named) at
  concurrency 4, 16 and 64 (TP 8) and 64 (TP 4, TP 2), the same 1k/1k.
* InferenceX pull requests #1053 and #1092 (2026-04): gpt-oss-120b on MI300X, vLLM v0.17.0 for ROCm, graphs:
  one GPU at concurrency 64 and 128 (median TPOT 31.4 and 41.3 ms) and eight (TP 8) at concurrency 1 and 4
  (about 249 and 234 tokens/s a user, 1,000 / TPOT: rounded as published).
* tenstorrent/tt-inference-server issue #340 (2025-06/07): Qwen3-30B-A3B and Qwen3-0.6B on one A100, GPU
  reference runs; the engine is not named (vLLM assumed, as the project's GPU workflow, V1 of mid-2025: CUDA
  graphs), bf16, the A100 80GB assumed. Mean TPOT at concurrency 1, 128 / 1,024 / 8,192 in and 128 out, as a
  decode step at context input + 64. TTFT left out (through an HTTP server).
* huggingface/text-generation-inference pull request #1243 (late 2023): Llama-2-13b-chat on an A100 (80GB
  assumed, one shard assumed), text-generation-benchmark's prefill step of batches of 100 and 200 sequences of 40
  tokens, fp16; TGI then ran its own fused kernels without CUDA graphs: `fused`.
* InternLM/lmdeploy issue #210 (2023-08-08): Llama-2-7b-chat on one A10, batch 1, 20 tokens in and 267 out, "about
  27 ms per token" with TurboMind (`fused`, fp16) and "about 34 ms per token" with Hugging Face's own
  implementation (`hf-eager`, its cache concatenated, as transformers of 2023 did), each a decode step at
  context 20 + 133.
Left out: vLLM issue #20710 (Llama-3.3-70B FP8 on two B200s: filed as an anomaly, checkpoint and TP not stated),
SGLang pull request #32668 (the GPU named only "SM120"), threads whose tables the stored copy cuts off, NVFP4
checkpoints, and models of architectures roofcalc has not read before (MiniMax-M2.7, Gemma 4, DeepSeek-V4).
Printed as the tenth: as every set, then under each engine's preset (`--engine sglang`, `vllm`) with its host time.

A twelfth set (CASES_12, CASES_12_MULTI) was transcribed on 2026-12-05 by a helper searching GitHub threads and
pages for sources none of the sets above holds (and the rows of one document a set holds that it never
transcribed), and committed before roofcalc ran on any of it; the same rules hold, and these choices were fixed
with it:
* XiongjieDai/GPU-Benchmarks-on-LLM-Inference (README, May 2024 snapshots): llama-bench on Meta-Llama-3-8B, Q4_K_M
  and F16 on an RTX 3090 and an RTX 4090, tg 512 (and tg 8,192 for the 4090's F16) and pp 512. Q4_K_M as int4 in
  groups of 32 (the fourth set's rule). The build is not printed and llama.cpp's CUDA graphs landed that month
  (#6766, 2024-05-08): `fused`, as before them (under the llama.cpp preset too, whose host time is its graphs'
  era's: a choice made with the set). A tg N row is a decode step at context N/2; a pp 512 row a prefill
  of 512 (fp16 activations and cache).
* ggml-org/llama.cpp pull request #16649 (2025-10-18): the master column, gpt-oss-20b MXFP4 on an RTX 4090, tg128
  and tg32: `cuda-graph` (the fifth set's rule for llama.cpp from May 2024), the experts MXFP4 and the rest bf16 as
  the checkpoint stores them. gpt-oss-20b's config is configs/gpt-oss-20b.json: gpt-oss-120b's published config
  with the two sizes the gpt-oss model card gives the 20b (24 layers, 32 experts; layer_types cut to its 24
  layers; 20.9 B parameters, the card's "21B").
* ggml-org/llama.cpp issue #20835 (2026-03-21): build 8322 (before the regression it reports), RTX 5090,
  Qwen3-30B-A3B-Instruct (UD-Q4_K_XL, 16.45 GiB: Q4_K as int4 in groups of 32), tg128 (`cuda-graph`) and pp512.
* QwenLM/Qwen3 issue #1536 (the same text as vLLM issue #20469, 2025-07-04): Qwen3-14B-AWQ on one A100 80GB, vLLM
  v0.9.1 with --enforce-eager (`fused`, the fifth set's rule for vLLM's eager mode), concurrency 1, random 16,000
  in and 200 out: mean TPOT as a decode step at context 16,100 (TTFT left out: through an HTTP server). AWQ as int4
  in groups of 128 with fp16 activations. Qwen3-14B's config is configs/qwen3-14b.json (the hub's text, as a
  public copy prints it: index file 30247352769, "Qwen3-14B" under a list of Qwen configs).
* gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md (the document of the fifth set's GPUSTACK row,
  which holds its vLLM row alone): its SGLang v0.5.3.post3 rows (Qwen3-8B bf16 and Qwen3-8B-FP8, block-scaled)
  and its TensorRT-LLM v1.2.0rc1 row (bf16) at max concurrency 4, ShareGPT (233 in and 221 out on average): median
  TPOT as a decode step of batch 4 at context 344. SGLang `cuda-graph`; TensorRT-LLM's PyTorch backend `fused`
  (the tenth set's rule).
* vllm-project/vllm pull request #23151 (2025-08-19): Qwen3-30B-A3B bf16 on one H100 (SXM assumed), vLLM main of
  that date with its stock fused-MoE configurations, random 2,048 in and 1,024 out (1,016 on average), concurrency
  10: mean TPOT as a decode step of batch 10 at context 2,048 + 508, `cuda-graph`.
* John Musgrave's page "vLLM throughput-latency sweep on NVIDIA A100" (vLLM 0.23.0): Llama-3.1-8B-Instruct on one
  A100 40GB, concurrency 1, 1,024 in and 128 out, "about 75 tokens/sec" (rounded in the text): a decode step at
  context 1,088, `cuda-graph`.
* vllm-project/vllm issue #30326 (2025-12-09): gpt-oss-120b on eight H200s (TP 8), vLLM main just before pull
  request #29708 (the issue's regression left out), random 1,024 in and 1,024 out, concurrency 8, 40 prompts:
  output throughput 1,947.66 tokens/s as whole requests of a static batch of 8 (prefill included), per GPU over 8.
  The chat template's few extra prompt tokens are not counted.
Left out: rows that name no GPU, TP or lengths, queue-dominated runs, speculative decoding, NVFP4 checkpoints,
H20 / A800 / L20 GPUs, and the page's rounded figures but one (the list with reasons: docs/validation.md).
Printed as the others: as every set, then under each engine's preset with its host time.

A thirteenth set (CASES_13, CASES_13_MULTI) was transcribed on 2026-12-05 by a helper searching GitHub threads for
sources none of the sets above holds (it ran nothing), and committed before roofcalc ran on any of it; the same
rules hold, and these choices were fixed with it:
* ggml-org/llama.cpp pull request #6017 (2024-03-12, ggerganov's single-GPU table): codellama-7b F16 on one A100
  80GB PCIe, llama-bench pp512, pp1024, pp2048, pp4096, pp8192 and tg128 (its Q8_0 and Q4_0 rows are cut off in
  the copy read). codellama-7b is given as Llama-2-7b (the first set's rule: its vocabulary of 32,016 and RoPE
  base change no count that matters); before llama.cpp's CUDA graphs: `fused`. A pp P row is a prefill of P (the
  PR's micro-batches of 512 counted as one pass, as vLLM's two-step prefills of the eighth set were), tg128 a
  decode step at context 64.
* ggml-org/llama.cpp pull request #17505 (JohannesGaessler, late 2025): the master column's RTX 4090 row of
  "llama 8B" Q4_0 (Meta-Llama-3-8B assumed; int4 in groups of 32) at micro-batch 1, pp512@d32768: 512 tokens one
  at a time after 32,768 cached, so decode steps at contexts 32,769 to 33,280: a step at 33,024, `cuda-graph`
  (the fifth set's rule for llama.cpp from May 2024). Its RTX 3090 row (a 512-token prefill onto 32,768 cached
  tokens) is left out: roofcalc's prefill starts from an empty cache.
* ggml-org/llama.cpp pull request #7860 (June 2024): the master column's RTX 4090 row of "llama 8B" Q4_K_S
  (Meta-Llama-3-8B assumed; a K-quant as int4 in groups of 32, the fourth set's rule) at micro-batch 2,048,
  pp2048: a prefill of 2,048, `fused`. Its micro-batch-512 row (the same prompt in four chunks) is left out, and
  so are pull request #7716's Q5_0 rows (a 5-bit format roofcalc does not have).
* vllm-project/vllm pull request #5238 (2024-06-04): Mixtral-8x7B-v0.1 in FP8 on H100s (SXM assumed: the PR's
  tuned files name H100_80GB_HBM3), TP 2 and TP 4, benchmark_serving at one request a second, 1,000 in and 50
  out: its inter-token latency (mean or median: not said) as a decode step of batch 1 at context 1,025, vLLM's V0
  engine with CUDA graphs (`cuda-graph`), FP8 as vLLM's dynamic per-tensor fp8 (`fp8-t`, 16-bit activations
  between and in the cache: its default), the PR's rows and the rows before it ("was": the stock MoE tiles). At
  one request a second another request's prefill can fall inside a step: not taken out.
Printed as the others: as every set, then under each engine's preset with its host time (llama.cpp's, and
`vllm-v0` for the Mixtral rows: written for 0.2.6 to 0.4.2, the nearest preset to V0 of June 2024).

A fourteenth set (CASES_14, CASES_14_MULTI) was transcribed on 2026-12-05 by a helper searching papers, vendor
pages and benchmark repositories for sources none of the sets above holds (it ran nothing), and committed before
roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* argonne-lcf/LLM-Inference-Bench (the result files behind arXiv:2411.00136, Plots/All_results.csv,
  Plots/Fig_21/all_results_TTFT.csv and Plots/Fig_3/A100_H100_quant_all_results.csv, September 2024): vLLM's
  benchmark_latency with dummy prompts, ignore_eos, --dtype float16, CUDA graphs (enforce_eager not passed), the
  mean of 30 runs of one llm.generate() of a static batch, input length = output length. A row is a request of
  that batch (the eighth set's rule: output tokens/s per GPU = batch x output / latency / TP, prefill included;
  vLLM's prefill split by max_num_batched_tokens counted as one), `cuda-graph`, fp16. The H100s are SXM (the same
  lab's nodes print "H100 80GB HBM3"); vLLM unpinned on them (pip, September 2024: V0). Qwen2-7B and Qwen2-72B have
  Qwen2.5-7B's and Qwen2.5-72B's sizes (the sixth set's rule). The output-1 rows of the TTFT file are prefills of
  16 x 1,024. The FP8 rows (neuralmagic/Meta-Llama-3-8B-Instruct-FP8: static per-tensor W8A8, fp8 KV) take
  published.py's FP8 recipe; the fp16-weight row with an fp8 KV cache is that. The MI300X rows are vLLM v0.6.1's
  ROCm build (HIP graphs: `cuda-graph`). Left out: the source's TensorRT-LLM rows (one timed run, the end token
  not disabled, so the generated length is not known), its A100 rows (40 or 80 GB not stated) and its other
  accelerators.
Printed as the others: as every set, then under `vllm-v0` (V0 of September 2024 and v0.6.1) with its host time.

A fifteenth set (CASES_15) was transcribed on 2026-12-05 by a helper searching GitHub threads, pages and
repositories for sources none of the sets above holds (it ran nothing; two sources were clean enough), and
committed before roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* QwenLM/Qwen2.5 docs/source/benchmark/hf_infer.rst @ 14544eb ("HF Transformers Inference", the Qwen1.5 series;
  a file apart from the speed_benchmark.rst the fifth and seventh sets read): NVIDIA A100 80GB (SXM assumed),
  PyTorch 2.1.2, Flash Attention 2.5.6, transformers of early 2024 (not named), batch 1, 2,048 tokens generated
  after inputs of 1, 6,144, 14,336 and 30,720. Every Qwen1.5-7B-Chat row on one GPU (bf16, GPTQ-Int4, AWQ; the
  "w FA2" figure): `hf-eager` with transformers' growing cache, a request case (speed = 2,048 / the whole request,
  the fifth set's reading of Qwen's pages). bf16 and GPTQ as the fifth set (int4 in groups of 128, bf16 between);
  AWQ int4 in groups of 128 with fp16 activations (AWQ's kernels run fp16). Qwen1.5-7B's config is
  configs/qwen1.5-7b.json: the hub's text as huggingface/transformers @ f092c38 carries it
  (examples/pytorch/torchacc/qwen/Qwen1.5-7B/config.json; its safetensors index, 15,442,649,088 bytes, is what
  roofcalc counts). Left out: the other sizes (no published config at hand), the MoE rows (the page: "the MoE model
  runs much slower than expectation" in its HF code), rows on several GPUs (layers split by device_map, not tensor
  parallelism) and every "wo FA2" figure.
* dmatora/LLM-inference-speed-benchmarks issue #11 (2024-08-26; the reporter, GPU and build of issue #12, which the
  fifth set holds): "Mistral Instruct 7B Q4_K_M" on an RTX 3080, llama.cpp build 93bc383 (3622), "Prompt
  evaluation: 4031.87" and "Token generation: 119.66" tokens/s: llama-bench's pp512 and tg128 assumed (the fifth
  set's rule), tg `cuda-graph` and pp `fused` (its rule for that build), Mistral-7B-v0.1's sizes (the fourth set's
  rule), Q4_K_M as int4 in groups of 32.
Printed as every set runs.

A sixteenth set (CASES_16) was transcribed on 2026-12-05 by a helper reading two repositories' files (it ran
nothing), and committed before roofcalc ran on any of it; the same rules hold, and these choices were fixed with it:
* huggingface/optimum-benchmark's examples on one A100-SXM4-80GB (October 2023): running-llamas at 6a25a6d (fp16
  and GPTQ, prompts of 256, 512 new tokens), its earlier runs at 09886e9 (deleted at 6a25a6d; prompts of 512, 1,000
  new tokens) and running-mistrals at 09886e9 (fp16, GPTQ, AWQ; 512 and 1,000). Each folder's hydra_config.yaml
  and inference_results.csv: torch 2.1.0, transformers 4.34.1 (4.35.0.dev0 for Mistral's fp16 and AWQ),
  float16, no BetterTransformer, no torch.compile, greedy generate of exactly the new tokens. transformers of
  those versions runs Llama's and Mistral's eager attention (matmul, softmax in fp32, matmul: SDPA became the
  default in 4.36) and concatenates its cache: `hf-eager`, attention `unfused`, cache `concat`. Two cases a
  folder, from optimum-benchmark's inference benchmark at those commits (benchmarks/inference/benchmark.py): its
  forward latency, one forward of the whole prompt (a prefill of batch x prompt), and its generate throughput,
  batch x new tokens / the whole generate() (prefill included: a request case). Printed to 3 significant
  digits. GPTQ (TheBloke's main branches) and AWQ (ybelkada/test-mistral-7b-v0.1-awq) record no bits or group
  size: int4 in groups of 128 with fp16 between (the fifteenth set's rule). Left out: the bitsandbytes 4-bit rows
  (its 4-bit weights are dequantized to 16 bits for each matmul above batch 1, a kernel path roofcalc does not
  model).
* bitsandbytes-foundation/bitsandbytes benchmarking/README.md (added 2024-12-04, b8c736b; read at 81e6345):
  optimum-benchmark 6e6b1036, transformers 4.46.3, torch 2.5.1, one GPU ("NVIDIA T4 16GB", "NVIDIA RTX 4090 24GB",
  "NVIDIA H100 80GB SXM"). Its "Mean Latency (s)" is optimum-benchmark's per-token latency, the mean time between
  two generated tokens of the batch (trackers/latency.py; batch / latency is its printed throughput to 0.3 %): a
  decode step. No lengths are printed: its script's defaults at that commit (inference_benchmark.py: a prompt of
  64; optimum-benchmark's 100 new tokens) are assumed, so the middle of the generation, context 114. transformers
  4.46 runs PyTorch SDPA and its DynamicCache concatenates: `hf-eager`, cache `concat`. The FP16 (T4) and BF16 rows
  only: NF4 and LLM.int8() are bitsandbytes' own kernel paths, not a weight format roofcalc has. "Llama 3.1 8B"
  is Llama-3.1-8B's sizes; "Qwen 2.5 3B Instruct" and "Qwen 2.5 32B Instruct" are their hub configs as
  repositories carry them: configs/qwen2.5-3b-instruct.json from sophgo/LLM-TPU @ f57aebd
  (models/Qwen2_5/compile/files/Qwen2.5-3B-Instruct/config.json; its parameter count, 3,085,938,688, is the hub's
  API figure), configs/qwen2.5-32b-instruct.json from Hanson-Wang-chn/AI-Prof @ bda917b
  (LLM/Qwen2.5-32B-Instruct/config.json, a copy of the hub repository without weights; its count times two bytes
  is that copy's safetensors index, 65,527,752,704 bytes).
Left out: TGI pull request #586's Falcon-7B table on an A10G (only part of it could be read; its lengths and TGI's
version are not given).

A seventeenth set (CASES_17, CASES_17_MULTI) was transcribed on 2026-12-05 by a helper reading two repositories'
files (it ran nothing), and committed before roofcalc ran on any of it, after the int4 kernels' re-read above; the
same rules hold, and these choices were fixed with it:
* NVIDIA/TensorRT-Model-Optimizer benchmark.md @ 111b2da (2025-01-08, "Update LLM Perf benchmarks for 0.21"):
  TensorRT-LLM v0.15 engines built by nvidia-modelopt v0.21.1 on an H200 (the 141 GB SXM), trtllm-bench, 2,048
  input and 128 output tokens. Its Tokens/sec is the engine's output tokens/s (its speedups, "normalized to the GPU
  count", check it: 70B at batch 8, 93.98 x 2 / 182.61 = 1.03x as printed): a static batch of B requests, prefill
  included (a request case; per GPU, over TP). TensorRT engines: `fused`, TensorRT-LLM's kernel tables (the rule
  for TensorRT-LLM cases). BF16 rows in bf16 (Llama-3.1-70B at TP 2, as the table says), FP8 rows as
  published.py's FP8 recipe (ModelOpt's FP8 checkpoints quantize the KV cache too, as the fourth set's
  TensorRT-LLM v0.9 rows were read), INT4 AWQ rows as int4 in groups of 128 (ModelOpt's default) with bf16
  activations and KV cache (the table gives no KV dtype; the format is weights-only) on TensorRT-LLM's own W4A16
  GEMMs (Marlin-like). Llama3.1-8B and -70B are meta-llama/Llama-3.1-8B and -70B's sizes. Left out: the W4A8 AWQ
  columns (int4 weights with fp8 activations, not a format roofcalc has), and the file's earlier H100 tables (no
  lengths).
* vllm-project/vllm-project.github.io _posts/2026-04-22-fp8-kvcache.md @ 78672b0 (2026-04-24, "The State of FP8
  KV-Cache and Attention Quantization in vLLM"): vLLM v0.19.1, FlashAttention-3, one H100 (the post's Hopper
  experiments; its throughput tables are taken to run on it too; the SXM part assumed, the post does not say:
  the cases name H100-SXM, a choice made with the set and said here after its first run), bf16 weights, the KV cache and attention in
  bf16 or fp8 (`--kv-cache-dtype fp8`). vLLM V1 decodes under CUDA graphs: `cuda-graph`. Its fitted inter-token
  latency at concurrency 1, 128 output tokens, "ITL = slope x input_len + intercept" (Llama-3.1-8B: 4.37e-05 and
  2.37e-05 ms/token, 6.44 and 6.58 ms), evaluated at prompts of 1,024 and 65,536 tokens inside its 256 to 125k
  sweep: a decode step at batch 1, context prompt + 64 (derived from the published fit, not a raw point). Its
  throughput runs (150 requests at concurrency 8, about 20k in and 2k out): the median ITL as a decode step at
  batch 8, context 21,000 (assumed: the middle of the output); Llama-3.1-8B in bf16 and fp8 KV, gpt-oss-20b
  (configs/gpt-oss-20b.json: MXFP4 experts) in bf16 and fp8 KV. Left out: its "FP8 skip-SW" row (fp8 KV on some
  layers only, not a cache roofcalc has), its TTFTs (taken under load), its B200 fits (left out when transcribed:
  outside the GPUs the helper was asked to look for, a choice, not a rule; not added after the first run), and gpt-oss-20b's concurrency-1 fit (its intercept given only as a range).
Left out: text-generation-inference issue #1315 (CodeLlama-34B on A100s and H100s at TP 1-4: no config of
CodeLlama-34B at hand offline, and its prompt length not given).
Printed as every set runs.

An eighteenth set (CASES_18, CASES_18_MULTI) was transcribed on 2026-12-05 by a helper reading a blog post's
markdown and three model cards (it ran nothing), and committed before roofcalc ran on any of it; the same rules
hold, and these choices were fixed with it:
* PyTorch's blog "Accelerating LLM Inference with GemLite, TorchAO and SGLang" (pytorch/pytorch.github.io
  _posts/2025-01-21-accelerating-llm-inference.md @ 838362f): Llama-3.1-8B-Instruct (Llama-3.1-8B's sizes) on
  an "8xH100 machine" (SXM assumed), SGLang built from feb2b76 with torch.compile (SGLang decodes under CUDA
  graphs: `cuda-graph`), PyTorch 2.5.1, sglang.bench_offline_throughput with random prompts of exactly 1,024
  tokens and 512 out, a static batch of 1 or 32 (TP 1, and TP 4 at batch 32: PyTorch's own tensor parallelism
  over NVLink). Its figure is the last logged decode throughput of the whole batch (tokens/s): a decode step is
  batch / tokens/s, at context 1,490 (SGLang logs every 40 decode steps: the window before the 511th step,
  about 1,024 + 466). bf16 weights and KV cache; "int4 weight only quantization, group size 64" as int4 in
  groups of 64 with 16-bit activations (tinygemm or GemLite: the table does not say which; both are read as
  the Marlin-like default, no --int4-kernel); "float8 per row dynamic quantization" as `fp8-ch`.
* Neural Magic's model cards of February 2025 (huggingface.co neuralmagic/DeepSeek-R1-Distill-Llama-8B-*,
  -Llama-70B-*, -Qwen-32B-*, README.md, "Single-stream performance (measured with vLLM version 0.7.2)"):
  GuideLLM's synchronous single stream against vLLM 0.7.2's server, emulated prompts of 256 and 4,096 tokens
  with 1,024 and 512 generated (its Code Completion and Large Summarization columns), the whole request's
  latency in seconds (printed to one decimal; the shortest taken is 4.1 s). A request case of batch 1 (output
  tokens/s per GPU: generated / latency / GPUs), TP = the GPU count (not stated). vLLM 0.7.2 (V0) decodes
  under CUDA graphs: `cuda-graph`, vLLM's kernel tables; its HTTP server, tokenizer and scheduler are not
  counted (no preset's host time, as every set). DeepSeek-R1-Distill-Llama-8B, -Llama-70B and -Qwen-32B are
  Llama-3.1-8B's, Llama-3.1-70B's and Qwen2.5-32B's sizes (configs/qwen2.5-32b-instruct.json). The GPUs are
  not named beyond "A6000", "A100" and "H100": the cards' queries-per-dollar at Lambda's on-demand prices of
  2025-02-18 give $0.80, $1.79 and $3.29 an hour, the RTX A6000's, the A100 SXM 80 GB's and the H100 SXM's
  (and the 32B in bf16 on one A100 needs 80 GB). bf16 weights and KV cache; FP8-dynamic (per-channel weights,
  dynamic per-token activations) as `fp8-ch`; w4a16 (GPTQ, symmetric, groups of 128; vLLM's Marlin) as int4 in
  groups of 128. vLLM 0.7.2 prefills a 4,096-token prompt in two chunks of 2,048 (chunked prefill, on by
  default for a 131k context): taken as one prefill, as roofcalc runs it.
Left out: the cards' INT8 W8A8 rows (int8 activations: not a format roofcalc has), their 10,240 / 1,536 column
(inconsistent: FP8 slower than bf16 on the H100), their requests shorter than 4 s (one decimal: up to 7 %
rounding), their Code Fixing column (within 2 % of Code Completion) and their multi-stream tables (throughput
under load); the blog's torchchat post (lengths and group sizes not given); sources whose tables are figures
(LMSYS's SGLang posts, optimum-nvidia's) or whose GPU is not in the catalog.
Printed as every set runs.

A nineteenth set (CASES_19) was transcribed on 2026-12-05 by a helper reading one more model card of the eighteenth
set's family (it ran nothing), and committed before roofcalc ran on any of it; the eighteenth set's rules for those
cards hold (vLLM 0.7.2, GuideLLM's single stream, whole requests of 256 + 1,024 and 4,096 + 512 tokens, latency
printed to one decimal and taken from 4 s, TP = the GPU count, `cuda-graph`, the GPUs from the queries-per-dollar
at Lambda's prices of 2025-02-18: $0.80, $1.78-1.79 and $3.28-3.32 an hour, the RTX A6000, the A100 SXM 80 GB and
the H100 SXM):
* neuralmagic/DeepSeek-R1-Distill-Qwen-7B-quantized.w4a16's README.md (February 2025), its single-stream table:
  DeepSeek-R1-Distill-Qwen-7B in bf16, FP8-dynamic (H100 only) and w4a16 (GPTQ, groups of 128) on one RTX A6000,
  A100 or H100. Qwen2ForCausalLM of Qwen2.5-7B's sizes (hidden 3,584, 28 layers, 28 query and 4 KV heads,
  intermediate 18,944, vocabulary 152,064, embeddings not tied): the catalog's Qwen/Qwen2.5-7B.
Left out: the card's INT8 W8A8 rows, requests under 4 s, its 10,240 / 1,536 and Code Fixing columns (the eighteenth
set's reasons); granite-3.1-8b's cards of the same family (vLLM 0.6.6.post1, RTX A6000, A100 and L40: their A100's
memory is not stated and no priced column tells it, and no granite-3.1 config is at hand, only granite-3.3's, whose
vocabulary differs); DeepSeek-R1-Distill-Qwen-1.5B's and -14B's cards (no config of their sizes at hand).
Printed as every set runs.

A twentieth set (CASES_20) was transcribed on 2026-12-05 by a helper from one repository none of the sets above holds
(it ran nothing), the cells checked against the stored files, and committed before roofcalc ran on any of it; these
choices were fixed with it:
* DerekLiu35/huggingface-quantization-benchmarking-code, runs/<run>/benchmark_report.md and benchmark_config.json
  (commits 063dcfb and c75115e; its lighteval results are dated 2025-03-08 to 2025-04-03): optimum-benchmark 0.5.0
  and 0.6.0.dev0, transformers' eager generate (no torch.compile, attn_implementation and cache_implementation
  unset: SDPA and the concatenating DynamicCache of transformers 4.47-4.50), batch 1, a 64-token prompt and
  exactly 64 greedy new tokens. `hf-eager`, cache "concat", attention fused (SDPA). Its "prefill" mean (one
  generate of one token) is a prefill of 64 tokens; its "decode" mean (the 64-token generate less the prefill,
  63 steps: its throughput is 63 / mean) over 63 is a decode step at batch 1 and context 64 + 64 / 2 = 96 (the
  middle of the generation, as the sixteenth set's decode steps). GPUs from each config's environment: "NVIDIA A100-SXM4-80GB"
  (A100-80GB), "NVIDIA H100 80GB HBM3" (H100-SXM), one device a run.
* Formats from each config: bf16 (torch_dtype bfloat16); fbgemm_fp8 (fp8 weights with a scale per output row,
  activations quantized per token at run time, bf16 elsewhere and in the KV cache) as `fp8-ch`, the eighteenth
  set's reading of "float8 per row"; AWQ 4-bit in groups of 128 with version "exllama" (torch_dtype unset:
  transformers runs AWQ in fp16) as int4 under `--int4-kernel exllama` (AutoAWQ's ExLlama kernel is the ExLlama
  kernel AutoGPTQ's exllama backend runs: dequantized to a 16-bit GEMM from 8 rows); torchao int4_weight_only in
  groups of 128 (torch_dtype unset: bf16, which the run's 5.86 GB allocated for Llama-3.1-8B fits and fp32 would
  not) as int4 with no --int4-kernel (its tinygemm kernel has no kernel-level figure here: the Marlin-like
  default, a choice).
* Models: meta-llama/Llama-3.1-8B-Instruct and -70B-Instruct (the catalog's Llama-3.1-8B and -70B sizes),
  hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 (Llama-3.1-8B's sizes).
Left out: the run named gptq (its config loads the AWQ checkpoint over five devices), the 70B "compile" run (not
compiled; its layers split over two A100s by device_map, which roofcalc does not model), the 2-bit and
vector-quantized runs (formats roofcalc does not have).
Printed as every set runs.

A twenty-first set (CASES_21) was transcribed on 2026-12-05 by a helper reading two repositories' files (it ran
nothing and looked at no prediction), and committed before roofcalc ran on any of it, after the GeForce cards' GEMMs
took their generation's memory side; its GPUs are all of the nearest kind (no measured tables), and its first run
checked the nearest kind's range on steps it had never seen (it joined the calibration after). The same rules
hold, and these choices were fixed with it:
* quack-ai/companion scripts/ollama/benchmark_result.csv @ 2cacaef (2024-03-27): Ollama 0.1.29 (its
  docker-compose.yml pins the image) on an "NVIDIA A10 (Lambda Cloud gpu_1x_a10)", an "A10G (AWS g5.xlarge)" and an
  "NVIDIA L4 (Scaleway L4-1-24G)" (catalog A10, A10G, L4); its evaluate_latency.py (at 62760c2) sends 20 chat requests
  one at a time (temperature 0) and writes generation_mean = all generated tokens / all of Ollama's eval_duration
  (llama.cpp's decode timer): a decode step at batch 1 is 1 / generation_mean. Output lengths are not recorded:
  context 256 assumed (a prompt of about 50 tokens and half an answer of a few hundred). Ollama 0.1.29 bundles a
  llama.cpp of early March 2024, before its CUDA graphs (May 2024) and FlashAttention (pull request #5021):
  `fused`, attention unfused. Q4_K_M as int4 in groups of 32 (the fourth set's rule). deepseek-coder-6.7b-instruct
  and OpenCodeInterpreter-DS-6.7B (its fine-tune) as Llama-2-7B's sizes (the model card's: 4,096 wide, 32 layers,
  32 heads and KV heads, 11,008; its vocabulary of 32,256 is 0.03 % more parameters; the first set's codellama
  rule), dolphin-2.6-mistral-7b as Mistral-7B-v0.1's. Left out: its ingestion figures (prompts of about 50 tokens in
  about 0.25 s, spread 30-45 %: not a GPU prefill), its 3-bit rows, and its laptop RTX 3060 and RTX 3070 rows (not
  in the catalog).
* ggml-org/ci (llama.cpp's CI results) llama.cpp/4d/0383321184aadf91968d9e3c6a45286ed2473b/ggml-4-x86-cuda-v100/ @
  a11e66d (2023-10-07, build 1344): open_llama_7b_v2-tg-{f16,q8_0,q4_0,q4_k}.log on a "Tesla V100-PCIE-16GB", main
  -ngl 999 -n 256 --ignore-eos after an 8-token prompt; its eval time over 255 runs is a decode step at batch 1 and
  context 8 + 256 / 2 = 136. OpenLLaMA-7B-v2 has Llama-2-7B's sizes (the log's metadata). Before CUDA graphs and
  FlashAttention: `fused`, attention unfused. F16 as fp16, Q8_0 as int8 in groups of 32, Q4_0 and Q4_K as int4 in
  groups of 32. The catalog's V100 is the SXM2 card, with the PCIe card's 900 GB/s (its fp16 peak is about 10 %
  higher): the decode rows take it. Left out: the same logs' perplexity runs (prefills of 2,048 tokens in
  micro-batches of 512 with every position's logits, on a compute peak the catalog's V100 does not have), and the
  bit widths roofcalc has no format for.
Printed as every set runs.

A twenty-second set (CASES_22) was transcribed on 2026-12-05 by a helper reading a repository's files and two issue
threads (it ran nothing and looked at no prediction), and committed before roofcalc ran on any of it, after an A100's
int4 matmuls took Marlin's A100 figure by layer size (predict.GA100_INT4_SIZE): sought as that change's first check on
steps nobody looked at, int4 weight-only models on A100s beside their 16-bit twins. The same rules hold, and these
choices were fixed with it:
* FreedomIntelligence/AccelMark @ 5797fc4, suite C's sustained scenario (results/verified/
  nvidia_a100_sxm4_{40,80}gbx1_suite_C_*/{bf16,w4a16}/sustained/result.json, 2026-04-15 and 2026-05-18): vLLM's
  AsyncLLMEngine in-process, Llama-3.1-8B-Instruct in bf16 and RedHatAI's Meta-Llama-3.1-8B-Instruct-quantized.w4a16
  (int4 weights, fp16 activations, the suite's "GPTQ Marlin kernels"; group 128, the eighteenth set's rule for that
  checkpoint family), one GPU, exactly 8 requests in flight for 15 minutes (the first minute left out), ShareGPT
  prompts (median about 280 tokens) and outputs up to 512 (the mean over each run's completed requests, from its
  samples: 348-358): a request case of batch 8, prompt 280 and that mean generated, its figure the run's output tokens/s of all
  8 streams. vLLM 0.7.3 ran with CUDA graphs (`cuda-graph`); vLLM 0.20.1's w4a16 run with enforce_eager (`fused`),
  its bf16 run's setting not recorded (vLLM's default, `cuda-graph`). The A100-SXM4-40GB and -80GB as the catalog's
  A100-40GB and A100-80GB. Left out: the open-loop rows (5 requests a second: how many run at once is not fixed) and
  the offline rows (their runner passes quantization="gptq", which can keep vLLM off Marlin, and submits every prompt
  at once).
* casper-hansen/AutoAWQ issue #276 (qingqiuhe, 2023-12-26): examples/benchmark.py on Llama-2-7b-chat-hf (Llama-2-7B's
  sizes), an "A100 80G" (the catalog's A100-80GB), batch 1: AutoAWQ of December 2023 (before v0.2.0:
  `--int4-kernel autoawq-0.1`), its fused layers (`fused`, the third set's rule for that script), AWQ 4-bit in groups
  of 128 (AutoAWQ's default; not stated) with fp16 activations; a decode step is 1 / its decode tokens/s at context
  prompt + decode length / 2, a prefill the prompt over its prefill tokens/s. Its FP16 rows run transformers' own
  model (`hf-eager`, the cache concatenated, as the third set's HF baseline). Left out: the prefill of each table's
  first row (a first call's warm-up, which the issue asks about) and the FP16 rows the stored thread cuts off.
* casper-hansen/AutoAWQ issue #645 (shanying2017, 2024-11-15): autoawq 0.2.6, examples/benchmark.py, llama2-13b-chat
  AWQ (GEMM) on an "NVIDIA A800-SXM4-40GB", batch 1: `--int4-kernel autoawq` (v0.2: its kernel below 1,024 tokens),
  `fused`, groups of 128 assumed; the A800 (an A100 with a slower NVLink) as the catalog's A100-40GB. Decode and
  prefill as above; its first row's prefill left out (warm-up).
* Left out whole: the DeepSeek-R1-AWQ and V3-AWQ model cards' 8 x A100 table (a patched vLLM build; its "TPS per
  request" not defined) and vLLM pull request #14138's 8 x A800 rows (prompt and output lengths not given).

A twenty-third set (CASES_23, CASES_23_MULTI) was transcribed on 2026-12-06 by two helpers reading repositories' files
(they ran nothing and looked at no prediction), checked against the files, and committed before roofcalc ran on any
of it: sought as the first check of the range since the twenty-second set joined it, with several GPUs (tensor
parallelism at 2, 4 and 8 of one model) from a source no set held. The same rules hold, and these choices were fixed
with it:
* NVIDIA/FasterTransformer docs/gpt_guide.md (read at df4a753; its GPT-175B and GPT-89B tables from 0280a66,
  2021-04-04, FasterTransformer 4.0; GPT-6.7B from 952a1f2, 2021-09-30; GPT-20B from a44c381, 2022-04-15, 5.0):
  "8xA100-80GBs (with mclk 1593MHz, pclk 1410MHz) ... linked by NVSwitch", the catalog's A100-80GB; FP16; the
  latency of one static batch, its context phase and then its output length of generated tokens: a request case
  of that batch, prompt and output, its figure batch x output / latency per GPU. The models are GPT-3's shapes,
  none a hub checkpoint: heads x 128 and layers from the guide, the FFN 4 x hidden and the vocabulary of 51,200
  from the repository's examples/cpp/multi_gpu_gpt/gpt_config.ini (its megatron_6.7B, megatron_20B and gpt_175B
  sections; the 89B's layers the guide's 48), as gpt2 configs in benchmarks/configs/fastertransformer/.
  FasterTransformer runs its own fused kernels without CUDA graphs (`fused`), writes its KV cache in place, and
  its context attention of those versions is unfused (GptContextAttentionLayer at a44c381: two batched GEMMs
  around invokeMaskedSoftMax): attention `unfused`. The 175B and 89B tables ran behind Triton (the guide says
  so; its request handling is not modelled) at TP 8. Rows taken, a rule fixed before any ran: from each length
  block taken, batches 1, 8 and the largest the block holds at every TP size shown; GPT-175B and GPT-89B both
  blocks (128 in, 8 out: batch 32; 512 in, 32 out: batch 16), GPT-20B at TP 1, 2, 4 and 8 the blocks of 128 in, 20
  out (batch 128) and 80 in, 200 out (batch 64: 128 runs out of memory on one GPU), GPT-6.7B both blocks (batch 64).
  (The first block's batch-128 rows were transcribed as batch 64 by a slip; both are kept, the batch-128 rows run
  after the set's first run: CASES_23_MISSED.) Left
  out: the Megatron columns (another engine, no version), Megatron-530B (figures and pipeline stages), GPT-1.3B
  and 350M, and the other blocks and batches.
* microsoft/MInference experiments/README.md @ fb56c91 (its table from e3569ed, 2024-06-07): "a single A100 GPU
  with 80GB of VRAM" (the catalog's A100-80GB), gradientai/Llama-3-8B-Instruct-Gradient-1048k (Llama-3-8B's
  sizes: Llama-3-8B-Instruct with its positions extended), experiments/benchmarks/benchmark_e2e.py: one forward of
  l x 1000 tokens, batch 1, use_cache=False, bf16, timed around torch.cuda.synchronize and averaged over 10; its
  "FlashAttention-2" column, MInference's patched forward with a dense FlashAttention-2 kernel and the last
  token's logits: a prefill, `hf-eager`, attention fused. Rows 50K, 100K, 200K and 300K. Left out: 1K and 10K
  (the 1K row's 0.546 s against the vLLM table's 0.081 s shows a fixed cost of the patched path of about 0.45 s
  that no kernel holds), 500K and 1000K (a KV cache of 500,000 x 131,072 bytes does not fit beside the weights in
  roofcalc's count, and from 700K the script keeps it on the CPU), the sparse columns, and the vLLM table (whether
  its long prompts ran as one pass or in chunked prefill is not recorded).
* Left out whole: mit-han-lab/qserve's README tables (W4A8 weights and activations with a 4-bit KV cache, formats
  roofcalc has no preset for) and the issue threads the first helper read (their GPU not named in the text
  stored, or a tokenizer and HTTP path in the figure).
A twenty-fourth set (CASES_24, CASES_24_MULTI) was transcribed on 2026-12-06 by a helper reading six sources none of
the sets above holds (it ran nothing and looked at no prediction), and committed before roofcalc ran on any of it:
sought as a check on engines of 2025-2026 (SGLang 0.5, vLLM 0.16-0.17, transformers 4.51) on the B200, H200, H100,
A100, MI300X and RTX 4090, many of them mixtures of experts on eight GPUs. The same rules hold, and these choices
were fixed with it:
* SGLang's cookbook (sgl-project/sgl-cookbook @ 7b5bd9c, docs/autoregressive/*, SGLang 0.5.6-0.5.9):
  sglang.bench_serving --dataset-name random, 10 prompts (the two ShareGPT pages: its default dataset, 100
  prompts), --max-concurrency 1, no --random-range-ratio (each request's lengths drawn up to the nominal ones); the mean lengths from each run's printed totals (1000/1000:
  610 in and 422 out; 8000/1000: 4,194 in; 1000/8000: 4,446 out; ShareGPT: 332 in and 213 out for gpt-oss, 338
  and 216 for Qwen3-Next). Its median TPOT is a decode step of batch 1 at the mean prompt plus half the mean
  output (context 821, 2,833 or 4,405); its median TTFT a prefill of the mean prompt (HTTP and tokenization in
  it, not modelled). SGLang's CUDA graphs (`cuda-graph`); tensor parallelism as its page launches it (--tp, the
  routed experts split by width: roofcalc's --tp); weights as the checkpoint stores them (DeepSeek's FP8 in
  blocks of 128; gpt-oss's MXFP4 experts). Models by their published configs (benchmarks/configs/published):
  DeepSeek-R1-0528 as DeepSeek-R1's, DeepSeek-V3.1 as DeepSeek-V3's, Qwen3-235B-A22B-Instruct-2507 as
  Qwen3-235B-A22B's; "A100" (its memory not given) as the A100-80GB. Left out: pages with speculative decoding,
  expert parallelism (MiniMax-M2.5 at --ep 8; MiniMax-M2's page, 4 MI300Xs at --tp 4, was left out with it
  by a slip, found by a review after the first run: its two rows run after and apart, CASES_24_MISSED_MULTI),
  checkpoints whose config is not in the repository
  (GLM-4.7-Flash, Ministral-3, Qwen3-Coder, Qwen3-Coder-Next, Step-3.5-Flash) and Kimi-K2.5 (int4 experts beside
  16-bit layers, a mix a case cannot give).
* The LMSYS blog "SGLang for gpt-oss" (lm-sys/lm-sys.github.io blog/2025-08-27-gpt-oss.md @ dbd47f4) with
  sgl-project/sglang benchmark/gpt_oss/README.md @ 1dc322c: SGLang v0.5.1.post3, bench_one_batch_server batch 1,
  1,024 in and 512 out, "single-batch decode throughput" (output tokens over the time after the first token): a
  decode step of batch 1 at context 1,280, its figure 1 / that rate; gpt-oss-120b (MXFP4 experts) and
  lmsys/gpt-oss-120b-bf16 (bf16 throughout) on 4 B200s (TP 4) and 8 H100s (TP 8, triton attention; the SXM
  assumed), `cuda-graph`.
* A gist of SGLang v0.5.8.post1 on 8 B200s (BenHamm/78563d0d..., 2026-02-16): bench_serving random 1K / 1K,
  concurrency 1, TPOT (its statistic not given); the cookbook's mean lengths assumed for the same tool's random
  1K / 1K (context 821): gpt-oss-120b at TP 8 and NVIDIA-Nemotron-3-Nano-30B-A3B-FP8 at TP 1 (its FP8 taken per
  tensor, ModelOpt's recipe, assumed; the BF16 checkpoint's config gives its sizes). Rows left out: the hub id
  or format not pinned down (Qwen3-235B, Kimi-K2), a config not in the repository (GLM-4.6, Qwen3-Coder-Next;
  GLM-5, whose successor GLM-5.1's config is here, its sizes not checked against GLM-5's), NVFP4 experts beside
  FP8 layers (DeepSeek-R1-0528-FP4).
* Vultr's B200 vLLM cookbook (docs.vultr.com inference-cookbook, updated 2026-03-11): vLLM 0.16.0, vllm bench serve
  random 2,048 in and 512 out, concurrency 1: NVIDIA-Nemotron-3-Nano-30B-A3B-FP8 at TP 2, its TPOT a decode step at
  context 2,304 and its TTFT a prefill of 2,048 (whether mean or median is not given), `cuda-graph`, FP8 per tensor
  as above. Nemotron-Super-49B (a pruned architecture with remote code) left out.
* THUDM/GLM-4 inference/README.md @ 3f79b54 (its table of 2025-04-14): transformers >= 4.51.3, eager generate with
  a TextIteratorStreamer, one H100 80GB HBM3 (the H100-SXM), batch 1, BF16, a random-token prompt and 128 new
  tokens (inference/trans_stress_test.py's default), the mean of 3 runs: GLM-4-9B-0414 at 1,000 to 100,000 tokens
  (past its config's max_position_embeddings of 32,768: how the source extended it is not given; run as listed).
  Its decode speed (streamed chunks over the time after the first) is a decode step at the prompt plus 64; its
  first-token latency, the time to the first streamed text, is the prompt's prefill and one decode step
  (`first-token`: the streamer emits text at a word's end). `hf-eager`, transformers' DynamicCache (`concat`),
  SDPA (attention fused). The GLM-4-32B-0414 rows (no config here; several GPUs by device_map, layers split,
  not tensor parallelism) left out.
* THUDM/GLM-4 basic_demo/README_en.md @ 8102212 (2024-06-06): transformers 4.40.0 running glm-4-9b-chat's own
  modelling code (torch's SDPA, a cache grown by concatenation), one A100-SXM4-80GB, batch 1, BF16, up to 512 new
  tokens (a context of the prompt plus 256 assumed), the mean of 3 runs: 1,000 to 128,000 tokens, read as the
  rows above (`hf-eager`, `concat`); glm-4-9b-chat-hf's config gives its sizes. Its int4 rows (bitsandbytes) left
  out.
* aaronzhfeng/gpu-inference benchmarks/rtx-4090.md @ 414c57c (2026-03-10): vLLM 0.17.0, one RTX 4090, one
  non-streaming chat request of 128 tokens after a one-sentence prompt (30 tokens with the chat template,
  assumed), its end-to-end latency: a request case of Qwen3.5-4B (`cuda-graph`, bf16). Qwen3.5-9B (no config
  here, run --enforce-eager) left out.
Each row is also run under its engine's preset with its host time (CASES_24_ENGINE: sglang, vllm, hf).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from published import FP8, Case, markdown, rows  # noqa: E402

VLLM_CI = ("vLLM nightly performance benchmark (buildkite.com/vllm/performance-benchmark, builds 9513, 9523, "
           "9555; .buildkite/nightly-benchmarks/tests/latency-tests.json): batch 8, 32 input and 128 output "
           "tokens, dummy bf16 weights, mean end-to-end latency")
LLM_PERF = ("mlc-ai/llm-perf-bench README.md @ d401356 (2023-11-14): fp16, batch 1, prompt 'What is the meaning of "
            "life?' (7 tokens), 256 tokens decoded, A100 PCIe ('all numbers are based on PCIe, not NVLink')")
GPT_FAST_TP = ("pytorch-labs/gpt-fast README.md @ 0f925b5, Tensor Parallelism table: 8xA100-80GB power-limited to "
               "330 W, batch 1, 5-token prompt (200 new tokens, its default: context 105 assumed, as published.py)")
LLAMA_CPP = ("llama.cpp pull requests #4766 (RTX 4090, ggerganov, 2024-01-10) and its RTX 3090 comparison "
             "table (JohannesGaessler, 'master' column): llama-bench tg128 and pp512")
PREMAI = ("premAI-io/benchmarks docs/llama2.md @ 004a252 (data of 2024-01-26): Llama-2-7B on an A100 80GB, batch 1, "
          "prompt 'Write an essay about the transformer model architecture', 512 new tokens (context 256 assumed)")

BF16 = dict(dtype="bf16")
FP16 = dict(dtype="fp16")


def _per_gpu(tokens_per_s: float, tp: int) -> float:
    """published.py's request cases are output tokens/s per GPU: a stream's tokens/s over its GPUs."""
    return tokens_per_s / tp


CASES = (
    # vLLM CI, one GPU: a whole batch of 8 requests; output tokens/s = 8 x 128 / end-to-end latency
    *(Case("request", "meta-llama/Meta-Llama-3-8B", hw, "cuda-graph", measured=8 * 128 / (ms / 1e3), source=VLLM_CI,
           batch=8, prompt=32, generate=128, note="vLLM CI latency_llama8B_tp1", **BF16)
      for hw, ms in (("A100-80GB", 1579.27), ("H200", 834.059), ("H100-SXM", 997.542))),
    # llama.cpp, January 2024: tg128 (128 tokens from an empty cache: context 64 in the middle), pp512
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "fused", measured=1 / 61.03, source=LLAMA_CPP, context=64,
         note="llama.cpp tg128, F16 (codellama-7b)", **FP16),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "fused", measured=1 / 98.13, source=LLAMA_CPP, context=64,
         weight_dtype="int8", group_size=32, gguf="q8_0", note="llama.cpp tg128, Q8_0 (codellama-7b)", **FP16),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX3090", "fused", measured=1 / 48.52, source=LLAMA_CPP, context=64,
         note="llama.cpp tg128, F16", **FP16),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX3090", "fused", measured=1 / 121.82, source=LLAMA_CPP, context=64,
         weight_dtype="int4", group_size=32, gguf="q4_0", note="llama.cpp tg128, Q4_0", **FP16),
    *(Case("prefill", "meta-llama/Llama-2-7b-hf", hw, "fused", measured=512 / tps, source=LLAMA_CPP, prompt=512,
           note=f"llama.cpp pp512, {fmt}", **FP16, **({"weight_dtype": "int4", "group_size": 32, "gguf": "q4_0"} if fmt == "Q4_0" else {}))
      for hw, fmt, tps in (("RTX4090", "F16", 11048.22), ("RTX4090", "Q4_0", 7979.85),
                           ("RTX3090", "F16", 4184.85), ("RTX3090", "Q4_0", 3408.18))),
    # premAI, A100 80GB, batch 1
    *(Case("decode", "meta-llama/Llama-2-7b-hf", "A100-80GB", impl, measured=1 / tps, source=PREMAI, context=256,
           note=engine, **FP16)
      for engine, impl, tps in (("vLLM", "cuda-graph", 90.54), ("TensorRT-LLM", "fused", 101.94),
                                ("Optimum-Nvidia", "fused", 109.09), ("DeepSpeed", "fused", 81.44))),
)

CASES_MULTI = (
    # vLLM CI under tensor parallelism (NVLink nodes)
    *(Case("request", model, hw, "cuda-graph", measured=_per_gpu(8 * 128 / (ms / 1e3), tp), source=VLLM_CI, batch=8,
           prompt=32, generate=128, tp=tp, note=f"vLLM CI {name}", **BF16)
      for model, name, tp, hw, ms in (
          ("meta-llama/Meta-Llama-3-70B", "latency_llama70B_tp4", 4, "A100-80GB", 3990.59),
          ("meta-llama/Meta-Llama-3-70B", "latency_llama70B_tp4", 4, "H200", 2075.08),
          ("meta-llama/Meta-Llama-3-70B", "latency_llama70B_tp4", 4, "H100-SXM", 2444.47),
          ("mistralai/Mixtral-8x7B-v0.1", "latency_mixtral8x7B_tp2", 2, "A100-80GB", 3643.84),
          ("mistralai/Mixtral-8x7B-v0.1", "latency_mixtral8x7B_tp2", 2, "H200", 1921.1),
          ("mistralai/Mixtral-8x7B-v0.1", "latency_mixtral8x7B_tp2", 2, "H100-SXM", 2326.97))),
    # llm-perf-bench: Llama-2-70B fp16 on A100 PCIe, one stream of 256 tokens after a 7-token prompt
    *(Case("request", "meta-llama/Llama-2-70b-hf", "A100-80GB-PCIe", "fused", measured=_per_gpu(tps, tp),
           source=LLM_PERF, prompt=7, generate=256, tp=tp, note=engine, **FP16,
           **({"weight_dtype": "int4", "group_size": 32} if "q4f16" in engine else {}))
      for engine, tp, tps in (("MLC LLM", 2, 17.0), ("MLC LLM", 4, 26.6), ("MLC LLM", 8, 38.8),
                              ("vLLM acbed3e", 2, 15.27), ("vLLM acbed3e", 4, 17.64), ("vLLM acbed3e", 8, 14.32),
                              ("MLC LLM q4f16_1", 2, 40.9))),
    # gpt-fast README: decode at batch 1 under its tensor parallelism (A100-80GB SXM nodes)
    *(Case("decode", model, "A100-80GB", "cuda-graph", measured=1 / tps, source=GPT_FAST_TP, context=105, tp=tp,
           note="gpt-fast, torch.compile (CUDA graphs)", **BF16)
      for model, tp, tps in (("meta-llama/Llama-2-7b-hf", 2, 168.84), ("meta-llama/Llama-2-7b-hf", 4, 254.02),
                             ("meta-llama/Llama-2-7b-hf", 8, 328.43), ("meta-llama/Llama-2-70b-hf", 2, 21.32),
                             ("meta-llama/Llama-2-70b-hf", 4, 38.01), ("meta-llama/Llama-2-70b-hf", 8, 62.50))),
)


LMDEPLOY = ("InternLM/lmdeploy docs/en/benchmark/a100_fp16.md @ 3e391df (TurboMind v0.1.0a1, 'tested on (x8) "
            "A100-80G', CUDA 11.8): static inference benchmark, fp16")
TRT_H200_07 = ("NVIDIA/TensorRT-LLM docs/source/blogs/Falcon180B-H200.md @ 3c44cb9 (v0.7a, Dec 2023): Llama-2-70B FP8 "
               "on one H200, static batch, out_tps = output x batch / total latency / TP")
TRT_H200_05 = ("NVIDIA/TensorRT-LLM docs/source/blogs/H200launch.md @ 1555478 (v0.5.0, TensorRT 9.1.0.4, Nov 2023): "
               "FP8 on one H200, the largest power-of-two batch, output tokens/s per GPU")
GPT_FAST_MOE = ("pytorch-labs/gpt-fast mixtral-moe/README.md @ 056f8fb: 8xA100-80GB power-limited to 330 W, batch 1, "
                "5-token prompt (200 new tokens, its default: context 105 assumed)")
L7, L13, L70 = "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-70b-hf"

CASES_2 = (
    # LMDeploy TurboMind, one A100-80G: whole static batches (output tokens/s)
    *(Case("request", model, "A100-80GB", "fused", measured=tps, source=LMDEPLOY, batch=b, prompt=p, generate=n,
           note="LMDeploy TurboMind v0.1", **FP16)
      for model, b, p, n, tps in ((L7, 1, 1, 128, 100.02), (L7, 1, 128, 128, 102.21), (L7, 1, 2048, 128, 86.1),
                                  (L7, 1, 2048, 2048, 93.78), (L7, 16, 128, 128, 1272.47),
                                  (L7, 16, 2048, 128, 348.87), (L7, 64, 1, 128, 4154.81),
                                  (L7, 64, 128, 2048, 1852.06), (L13, 1, 128, 128, 56.58),
                                  (L13, 1, 2048, 128, 48.99), (L13, 32, 1, 128, 1667.5))),
    # TensorRT-LLM on one H200, FP8: whole static batches (output tokens/s per GPU, prefill included)
    *(Case("request", model, "H200", "fused", measured=tps, source=src, batch=b, prompt=p, generate=n,
           tables="trtllm-0.6" if src == TRT_H200_05 else "trtllm", note=note, **FP8)
      for model, src, note, b, p, n, tps in (
          (L70, TRT_H200_07, "TensorRT-LLM v0.7a", 960, 128, 128, 3803),
          (L70, TRT_H200_07, "TensorRT-LLM v0.7a", 192, 128, 2048, 2941),
          (L70, TRT_H200_07, "TensorRT-LLM v0.7a", 96, 128, 4096, 1946),
          (L13, TRT_H200_05, "TensorRT-LLM v0.5", 1024, 128, 128, 11819),
          (L13, TRT_H200_05, "TensorRT-LLM v0.5", 128, 128, 2048, 4750),
          (L13, TRT_H200_05, "TensorRT-LLM v0.5", 64, 2048, 128, 1349),
          (L70, TRT_H200_05, "TensorRT-LLM v0.5", 512, 128, 128, 3014),
          (L70, TRT_H200_05, "TensorRT-LLM v0.5", 32, 2048, 128, 303))),
    # gpt-fast Mixtral, one A100-80GB, int8 weight-only (the engine the int8 factor came from)
    Case("decode", "mistralai/Mixtral-8x7B-v0.1", "A100-80GB", "cuda-graph", measured=1 / 56.04, source=GPT_FAST_MOE,
         context=105, weight_dtype="int8", group_size=4096, note="gpt-fast int8 weight-only (int8 factor's engine)",
         **BF16),
)

CASES_2_MULTI = (
    # LMDeploy TurboMind, Llama-2-70B on four A100-80G (TP 4)
    *(Case("request", L70, "A100-80GB", "fused", measured=_per_gpu(tps, 4), source=LMDEPLOY, batch=b, prompt=p,
           generate=n, tp=4, note="LMDeploy TurboMind v0.1", **FP16)
      for b, p, n, tps in ((1, 128, 128, 33.63), (1, 2048, 128, 28.32), (16, 1, 128, 468.52), (64, 1, 128, 1425.79),
                           (64, 128, 2048, 1391.8))),
    # gpt-fast Mixtral under tensor parallelism, batch 1
    *(Case("decode", "mistralai/Mixtral-8x7B-v0.1", "A100-80GB", "cuda-graph", measured=1 / tps, source=GPT_FAST_MOE,
           context=105, tp=tp, note=note, **BF16, **q)
      for tp, tps, note, q in (
          (2, 78.75, "gpt-fast bf16", {}), (4, 118.23, "gpt-fast bf16", {}), (8, 203.69, "gpt-fast bf16", {}),
          (2, 99.91, "gpt-fast int8 weight-only (int8 factor's engine)", {"weight_dtype": "int8", "group_size": 4096}),
          (8, 218.48, "gpt-fast int8 weight-only (int8 factor's engine)", {"weight_dtype": "int8", "group_size": 4096}))),
)


NEMO = ("NVIDIA NeMo Framework User Guide, Llama-2 inference performance (docs.nvidia.com/nemo-framework/user-guide/"
        "latest/performance/llama.html): 1-8x A100 80GB SXM4 / H100 80GB HBM3, 'input tokens length: 128', "
        "'output tokens length: 20', average latency of a batch")
NV_H100_BLOG = ("NVIDIA Technical Blog, 'Achieving Top Inference Performance with the NVIDIA H100 Tensor Core GPU and "
                "NVIDIA TensorRT-LLM' (2023-12): DGX H100, TensorRT-LLM v0.5.0, batch 1, 2,048 in / 128 out, 1.7 s")
AUTOAWQ = ("casper-hansen/AutoAWQ README.md @ 027758d (AutoAWQ 0.1.6, RTX 4090, examples/benchmark.py): AWQ 4-bit "
           "g128, fused layers; prefill and decode tokens/s")
TINYCHAT = ("mit-han-lab/llm-awq tinychat/README.md @ 048e19e, 4090 results: per-token generation latency, batch 1 "
            "(lengths not stated: context 640 assumed)")
TORCHAO = ("pytorch/ao torchao/quantization/README.md @ 03d01ad: 'a single A100', batch 1, _models/llama/generate.py "
           "(compile, reduce-overhead; default prompt and 100 new tokens: context 56 assumed)")
M7, TINY, L3_8 = "mistralai/Mistral-7B-v0.1", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "meta-llama/Meta-Llama-3-8B"
AWQ4 = dict(dtype="fp16", weight_dtype="int4", group_size=128)

CASES_3 = (
    # NeMo (TensorRT-LLM), one GPU: a static batch's whole request, 128 in and 20 out
    *(Case("request", L7, hw, "fused", measured=b * 20 / (ms / 1e3), source=NEMO, batch=b, prompt=128, generate=20,
           tables="trtllm", note="NeMo Framework (TensorRT-LLM), bf16 assumed", **BF16)
      for hw, b, ms in (("A100-80GB", 1, 234.0), ("H100-SXM", 1, 153.8), ("A100-80GB", 8, 329.5),
                        ("H100-SXM", 8, 199.2))),
    # AutoAWQ 0.1.6, RTX 4090: prefill (TTFT = batch x prompt / tokens per second)
    *(Case("prefill", model, "RTX4090", "fused", measured=b * p / tps, source=AUTOAWQ, batch=b, prompt=p,
           note="AutoAWQ 0.1.6 prefill", **AWQ4)
      for model, b, p, tps in ((M7, 1, 64, 1093.35), (M7, 1, 2048, 3897.02), (M7, 8, 2048, 3661.46),
                               (TINY, 1, 64, 1088.63), (L13, 1, 2048, 2279.41), (L13, 3, 64, 1593.88))),
    # its decode: a step = batch / tokens per second, at the middle of the generation
    *(Case("decode", model, "RTX4090", "fused", measured=b / tps, source=AUTOAWQ, batch=b, context=p + n // 2,
           note="AutoAWQ 0.1.6 decode", **AWQ4)
      for model, b, p, n, tps in ((M7, 1, 64, 64, 156.317), (M7, 1, 2048, 2048, 114.355),
                                  (M7, 8, 2048, 2048, 829.754), (TINY, 1, 64, 64, 548.993),
                                  (L13, 1, 2048, 2048, 73.8213), (L13, 3, 64, 64, 286.249))),
    # TinyChat, RTX 4090, batch 1: AWQ 4-bit and the Hugging Face FP16 baseline
    *(Case("decode", model, "RTX4090", impl, measured=ms / 1e3, source=TINYCHAT, context=640, note=note, **kw)
      for model, impl, ms, note, kw in (
          (L7, "fused", 6.02, "TinyChat AWQ 4-bit", AWQ4), (L3_8, "fused", 6.66, "TinyChat AWQ 4-bit", AWQ4),
          (L7, "hf-eager", 16.17, "TinyChat's HF FP16 baseline", dict(FP16, cache="concat")),
          (L3_8, "hf-eager", 17.07, "TinyChat's HF FP16 baseline", dict(FP16, cache="concat")))),
    # torchao's generate.py, one A100, batch 1, compiled
    *(Case("decode", model, "A100-80GB", "cuda-graph", measured=1 / tps, source=TORCHAO, context=56, note=note, **BF16,
           **q)
      for model, tps, note, q in (
          (L7, 107.38, "torchao bf16", {}), (L7, 201.14, "torchao int4wo-64", {"weight_dtype": "int4", "group_size": 64}),
          (L3_8, 95.64, "torchao bf16", {}),
          (L3_8, 153.03, "torchao int8wo (the int8 factor's engine lineage)",
           {"weight_dtype": "int8", "group_size": 4096}))),
)

CASES_3_MULTI = (
    # NeMo (TensorRT-LLM) under tensor parallelism: output tokens/s per GPU
    *(Case("request", L7, hw, "fused", measured=_per_gpu(b * 20 / (ms / 1e3), tp), source=NEMO, batch=b, prompt=128,
           generate=20, tp=tp, tables="trtllm", note="NeMo Framework (TensorRT-LLM), bf16 assumed", **BF16)
      for hw, tp, b, ms in (("A100-80GB", 2, 1, 171.7), ("H100-SXM", 2, 1, 128.6), ("A100-80GB", 4, 4, 165.2),
                            ("H100-SXM", 4, 4, 120.4), ("A100-80GB", 8, 8, 181.9), ("H100-SXM", 8, 8, 129.1))),
    # NVIDIA's blog: Llama-2-70B, eight H100s, FP8, one request
    Case("request", L70, "H100-SXM", "fused", measured=_per_gpu(128 / 1.7, 8), source=NV_H100_BLOG, batch=1,
         prompt=2048, generate=128, tp=8, tables="trtllm-0.6", note="TensorRT-LLM v0.5.0, FP8, TP 8 assumed", **FP8),
)


TRT_09 = ("NVIDIA/TensorRT-LLM docs/source/performance.md @ v0.9.0 ('All data was generated using version 0.9.0'): "
          "gptSessionBenchmark static batches, output tokens/s per GPU; batch-1 first-token latency")
NIM = ("docs.nvidia.com/nim/benchmarking/llm (Performance, Llama-3.3-70b-instruct, NIM 1.8.0, 2 x H100 80G, fp8 TP2), "
       "concurrency 1: inter-token latency and TTFT")
JAN = ("janhq/jan docs/src/pages/post/benchmarking-nvidia-tensorrt-llm.mdx @ 0035982 (2024-04-29): Mistral 7B v0.2, "
       "batch 1, input_len 2048, output_len 512, tokens/s")
HAMEL = ("hamelsmu/hamel-site notes/llm/inference/03_inference.ipynb @ 024c014 (July 2023): Llama-2-7B on an RTX "
         "A6000, batch 1, up to 200 new tokens, average tokens/s")
OPTIMUM = ("huggingface/optimum tests/benchmark/README.md @ 11e71e2: Llama-2-13B on one A100-SXM4-80GB, prompt 512, "
           "one new token (the prefill), AutoGPTQ 0.5.0, transformers 4.35")
L31_70 = "meta-llama/Llama-3.1-70B"  # Llama-3.3-70B-Instruct's sizes
MX = "mistralai/Mixtral-8x7B-v0.1"

CASES_4 = (
    # TensorRT-LLM v0.9.0, one GPU: static batches (output tokens/s per GPU, prefill included)
    *(Case("request", model, hw, "fused", measured=tps, source=TRT_09, batch=b, prompt=p, generate=n,
           tables="trtllm", note="TensorRT-LLM v0.9.0", **kw)
      for model, hw, b, p, n, tps, kw in (
          (L7, "H200", 64, 2048, 128, 2391, FP8), (L7, "H200", 56, 2048, 2048, 3522, FP8),
          (L70, "H200", 64, 2048, 2048, 1458, FP8), (L70, "H200", 64, 2048, 128, 418, FP8),
          (L7, "H100-SXM", 120, 128, 2048, 6944, FP8), (L7, "L40S", 16, 2048, 2048, 537, FP8),
          (M7, "L40S", 120, 128, 2048, 4387, FP8), (L7, "A100-80GB", 32, 128, 2048, 1484, FP16))),
    # its batch-1 first-token latency: the context phase
    *(Case("prefill", model, hw, "fused", measured=ms / 1e3, source=TRT_09, prompt=2048, tables="trtllm",
           note="TensorRT-LLM v0.9.0, first-token latency", **kw)
      for model, hw, ms, kw in ((L7, "H200", 30.2, FP8), (L7, "L40S", 80.1, FP8), (L7, "A100-80GB", 132.4, FP16))),
    # Jan: TensorRT-LLM 0.7.1 int4 AWQ and llama.cpp Q4_K_M, batch 1
    *(Case("decode", M7, hw, "fused", measured=1 / tps, source=JAN, context=2304, group_size=g, note=note,
           dtype="fp16", weight_dtype="int4", **kw)
      for hw, tps, g, note, kw in (
          ("RTX4090", 170.63, 128, "TensorRT-LLM 0.7.1 int4 AWQ (Jan)", {"tables": "trtllm"}),
          ("RTX3090", 144.19, 128, "TensorRT-LLM 0.7.1 int4 AWQ (Jan)", {"tables": "trtllm"}),
          ("RTX4090", 100.43, 32, "llama.cpp 15499eb Q4_K_M (Jan)", {}),
          ("RTX3090", 88.70, 32, "llama.cpp 15499eb Q4_K_M (Jan)", {}))),
    # Hamel Husain: Llama-2-7B on an RTX A6000, batch 1
    *(Case("decode", L7, "RTX-A6000", "fused", measured=1 / tps, source=HAMEL, context=120, note=note, **FP16, **q)
      for tps, note, q in (
          (44.8, "CTranslate2 fp16", {}), (62.6, "CTranslate2 int8", {"weight_dtype": "int8", "group_size": 4096}),
          (46.4, "vLLM of July 2023 (no CUDA graphs)", {}),
          (117.1, "MLC LLM q4f16_1", {"weight_dtype": "int4", "group_size": 32}))),
    # Optimum: transformers' prefill of 512-token prompts
    *(Case("prefill", L13, "A100-80GB", "hf-eager", measured=ms / 1e3, source=OPTIMUM, batch=b, prompt=512,
           cache="concat", note=note, **FP16, **q)
      for b, ms, note, q in (
          (1, 96.38, "transformers 4.35 fp16", {}), (4, 305.99, "transformers 4.35 fp16", {}),
          (16, 1209.07, "transformers 4.35 fp16", {}),
          (16, 1467.36, "AutoGPTQ 0.5.0 int4 g128 (exllamav2)", {"weight_dtype": "int4", "group_size": 128}))),
)

CASES_4_MULTI = (
    # TensorRT-LLM v0.9.0 under tensor parallelism: output tokens/s per GPU
    *(Case("request", model, hw, "fused", measured=tps, source=TRT_09, batch=b, prompt=p, generate=n, tp=tp,
           tables="trtllm", note="TensorRT-LLM v0.9.0", **kw)
      for model, hw, tp, b, p, n, tps, kw in (
          (MX, "H200", 2, 64, 2048, 128, 605, FP8), (MX, "H200", 2, 256, 128, 2048, 4973, FP8),
          (L70, "H100-SXM", 2, 64, 2048, 2048, 1011, FP8), (MX, "H100-SXM", 2, 32, 2048, 2048, 1317, FP8),
          (L70, "L40S", 4, 64, 2048, 2048, 185, FP8), (L70, "A100-80GB", 4, 64, 2048, 2048, 289, FP16))),
    *(Case("prefill", model, hw, "fused", measured=ms / 1e3, source=TRT_09, prompt=2048, tp=tp, tables="trtllm",
           note="TensorRT-LLM v0.9.0, first-token latency", **kw)
      for model, hw, tp, ms, kw in ((L70, "H100-SXM", 8, 85.1, FP8), (L70, "L40S", 4, 673.3, FP8),
                                    (MX, "A100-80GB", 2, 160.9, FP16))),
    # NIM 1.8.0: Llama-3.3-70B FP8 on two H100s, one stream
    *(Case("decode", L31_70, "H100-SXM", "cuda-graph", measured=ms / 1e3, source=NIM, context=ctx, tp=2,
           tables="trtllm", note="NIM 1.8.0 (TensorRT-LLM assumed), inter-token latency", **FP8)
      for ms, ctx in ((18.58, 5250), (18.91, 1500))),
    *(Case("prefill", L31_70, "H100-SXM", "cuda-graph", measured=ms / 1e3, source=NIM, prompt=p, tp=2,
           tables="trtllm", note="NIM 1.8.0 (TensorRT-LLM assumed), TTFT", **FP8)
      for ms, p in ((406.77, 5000), (47.77, 500))),
)


EXLV2 = ("turboderp/exllamav2 README.md @ 01d01a1: the author's quick tests on an RTX 4090, single stream, GPTQ "
         "4-bit g128 rows")
EXL1 = ("turboderp/exllama README.md @ 0558dea (2023-09-12), test_benchmark_inference.py on an RTX 4090: prompt "
        "1,920 tokens, best (empty context) and worst (2,048 context) of 128 generated")
LMD_W4 = ("InternLM/lmdeploy docs/en/w4a16.md @ 8e8629d (2023-08-14): RTX 4090, batch 1, 1 prompt token, 512 "
          "generated, 4-bit weights (TurboMind, MLC LLM)")
MLC_MULTI = "MLC blog 'Scalable Language Model Inference on Multiple NVIDIA and AMD GPUs' (2023-10-19)"
QWEN = ("QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst @ a912d23 (2024-11): A100 80GB, batch 1, 2,048 "
        "generated, speed = 2,048 / end-to-end time (vLLM 0.6.3, HF Transformers 4.46)")
OCI = ("Oracle Cloud blog 'Serving Llama 3.1 405B model with AMD Instinct MI300X Accelerators' (2024-10-10): vLLM "
       "benchmark_latency, 8 x MI300X, 128 in, 128 out")
AMD_ROCM = ("AMD ROCm hub performance results (rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006): vLLM latency, 8 x MI300X, "
            "TP 8")
GPUSTACK = ("gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md @ 1dbc3b8: vllm serve v0.11.0 on one "
            "H100 SXM, max concurrency 1, ShareGPT (233 in, 221 out on average)")
LCPP_3080 = "dmatora/LLM-inference-speed-benchmarks issue 12 (2024-08-26): llama.cpp build 93bc383, RTX 3080, llama-bench"
LCPP_4090 = "ggml-org/llama.cpp pull request #12183 (comment of 2025-03-17): RTX 4090, master, gen phase tok/s"
Q05, Q7, Q72, Q3_8 = "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-72B", "Qwen/Qwen3-8B"
L31_8, L32_3, L405 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.1-405B"
GPTQ4 = dict(weight_dtype="int4", group_size=128)
Q4_32 = dict(weight_dtype="int4", group_size=32)

CASES_5 = (
    # ExLlamaV2 and ExLlama, GPTQ 4-bit on an RTX 4090, batch 1
    *(Case("decode", model, "RTX4090", "fused", measured=1 / tps, source=EXLV2, context=256, note="ExLlamaV2 GPTQ",
           **FP16, **GPTQ4) for model, tps in ((L7, 198), (L13, 111))),
    *(Case("decode", model, "RTX4090", "fused", measured=1 / tps, source=EXL1, context=ctx, note=note, **FP16, **GPTQ4)
      for model, ctx, tps, note in ((L7, 64, 173, "ExLlama GPTQ, best"), (L7, 1984, 140, "ExLlama GPTQ, worst"),
                                    (L13, 64, 102, "ExLlama GPTQ, best"), (L13, 1984, 86, "ExLlama GPTQ, worst"))),
    *(Case("prefill", model, "RTX4090", "fused", measured=1920 / tps, source=EXL1, prompt=1920,
           note="ExLlama GPTQ prompt", **FP16, **GPTQ4) for model, tps in ((L7, 13918), (L13, 7507))),
    # LMDeploy's W4A16 table: TurboMind (AWQ g128) and MLC LLM (q4f16_1 assumed), batch 1, a step at context 257
    *(Case("decode", model, "RTX4090", "fused", measured=1 / tps, source=LMD_W4, context=257, note=note, **FP16, **q)
      for model, tps, note, q in ((L7, 206.4, "LMDeploy TurboMind AWQ", GPTQ4), (L13, 115.8, "LMDeploy TurboMind AWQ", GPTQ4),
                                  (L7, 159.4, "MLC LLM (LMDeploy's run)", Q4_32),
                                  (L13, 90.7, "MLC LLM (LMDeploy's run)", Q4_32))),
    # Qwen2.5 on one A100: one request of 2,048 generated tokens, prefill included
    *(Case("request", model, "A100-80GB", impl, measured=tps, source=QWEN, prompt=p, generate=2048, note=note,
           cache=cache, **BF16, **q)
      for model, impl, p, tps, note, cache, q in (
          (Q05, "cuda-graph", 1, 311.55, "vLLM 0.6.3", "in-place", {}),
          (Q7, "cuda-graph", 1, 84.28, "vLLM 0.6.3", "in-place", {}),
          (Q7, "cuda-graph", 30720, 70.33, "vLLM 0.6.3", "in-place", {}),
          (Q7, "cuda-graph", 1, 154.05, "vLLM 0.6.3 GPTQ-Int4", "in-place", GPTQ4),
          (Q7, "hf-eager", 1, 40.38, "HF Transformers 4.46", "concat", {}))),
    # GPUStack: vLLM 0.11.0 serving Qwen3-8B at concurrency 1, median TPOT
    Case("decode", Q3_8, "H100-SXM", "cuda-graph", measured=7.22e-3, source=GPUSTACK, context=344,
         note="vLLM 0.11.0, concurrency 1, median TPOT", **BF16),
    # llama.cpp on CUDA, Q4_K_M
    Case("decode", L31_8, "RTX3080", "cuda-graph", measured=1 / 111.95, source=LCPP_3080, context=64,
         note="llama.cpp 93bc383 Q4_K_M tg128", **FP16, **Q4_32),
    Case("prefill", L31_8, "RTX3080", "fused", measured=512 / 3806.89, source=LCPP_3080, prompt=512,
         note="llama.cpp 93bc383 Q4_K_M pp512", **FP16, **Q4_32),
    *(Case("decode", L32_3, "RTX4090", "cuda-graph", measured=1 / tps, source=LCPP_4090, context=ctx,
           note="llama.cpp master (March 2025) Q4_K_M", **FP16, **Q4_32) for ctx, tps in ((110, 269.83), (10100, 170.55))),
)

CASES_5_MULTI = (
    Case("decode", L70, "RTX4090", "fused", measured=1 / 34.5, source=MLC_MULTI, context=256, tp=2,
         note="MLC LLM q4f16_1 (assumed), one stream", **FP16, **Q4_32),
    *(Case("request", Q72, "A100-80GB", impl, measured=_per_gpu(tps, tp), source=QWEN, prompt=1, generate=2048, tp=tp,
           note=note, **BF16, **q)
      for impl, tp, tps, note, q in (("cuda-graph", 4, 31.37, "vLLM 0.6.3", {}),
                                     ("fused", 2, 18.19, "vLLM 0.6.3, enforce_eager", {}),
                                     ("fused", 2, 46.30, "vLLM 0.6.3 GPTQ-Int4, enforce_eager", GPTQ4))),
    *(Case("request", L405, "MI300X", "cuda-graph", measured=_per_gpu(b * 128 / s, 8), source=OCI, batch=b, prompt=128,
           generate=128, tp=8, note="vLLM (ROCm), Meta's FP8 (per-channel weights)", weight_dtype="fp8-ch", **BF16)
      for b, s in ((1, 3.530), (8, 3.974), (64, 6.919))),
    Case("request", L31_70, "MI300X", "cuda-graph", measured=_per_gpu(2048 / 15.882, 8), source=AMD_ROCM, prompt=128,
         generate=2048, tp=8, note="vLLM 0.10.2 (ROCm), FP8 with an FP8 KV cache", **FP8),
)


TRT_PERF_06 = ("NVIDIA/TensorRT-LLM docs/source/performance.md @ 138f96d: throughput 'updated for v0.6.1' "
               "(gptSessionBenchmark static batches, output tokens/s per GPU), L40S and first-token latency 'from v0.5'")
GPTJ = str(Path(__file__).parent / "configs" / "published" / "EleutherAI--gpt-j-6b.json")
F180 = str(Path(__file__).parent.parent / "docs" / "configs" / "falcon-180B.json")
_PREC = {"H100-SXM": FP8, "L40S": FP8, "A100-80GB": FP16}

CASES_6 = (
    # throughput tables: static batches on one GPU (output tokens/s per GPU, prefill included)
    *(Case("request", model, hw, "fused", measured=tps, source=TRT_PERF_06, batch=b, prompt=p, generate=n,
           tables="trtllm-0.6", note=f"TensorRT-LLM {'v0.5' if hw == 'L40S' else 'v0.6.1'}", **_PREC[hw])
      for model, hw, b, p, n, tps in (
          (GPTJ, "H100-SXM", 1024, 128, 128, 26150), (GPTJ, "H100-SXM", 120, 128, 2048, 8011),
          (GPTJ, "H100-SXM", 64, 2048, 128, 2551), (GPTJ, "H100-SXM", 64, 2048, 2048, 3327),
          (L7, "H100-SXM", 768, 128, 128, 19694), (L7, "H100-SXM", 112, 128, 2048, 6818),
          (L7, "H100-SXM", 80, 2048, 128, 2244), (L7, "H100-SXM", 48, 2048, 2048, 2740),
          (GPTJ, "L40S", 64, 128, 128, 3630), (GPTJ, "L40S", 64, 128, 2048, 1859),
          (GPTJ, "L40S", 32, 2048, 128, 616), (GPTJ, "L40S", 32, 2048, 2048, 757),
          (L7, "L40S", 64, 128, 128, 3240), (L7, "L40S", 64, 128, 2048, 1622),
          (L7, "L40S", 32, 2048, 128, 581), (L7, "L40S", 16, 2048, 2048, 531),
          (GPTJ, "A100-80GB", 512, 128, 128, 6374), (GPTJ, "A100-80GB", 60, 2048, 128, 670),
          (L7, "A100-80GB", 384, 128, 128, 5586), (L7, "A100-80GB", 60, 128, 2048, 1928),
          (L7, "A100-80GB", 52, 2048, 128, 591))),
    # first-token latency at batch 1 (v0.5): the context phase
    *(Case("prefill", model, hw, "fused", measured=ms / 1e3, source=TRT_PERF_06, prompt=p, tables="trtllm-0.6",
           note="TensorRT-LLM v0.5, first-token latency", **_PREC[hw])
      for model, hw, p, ms in (
          (GPTJ, "H100-SXM", 128, 7), (GPTJ, "H100-SXM", 2048, 29), (L7, "H100-SXM", 128, 7), (L7, "H100-SXM", 2048, 36),
          (GPTJ, "L40S", 128, 12), (GPTJ, "L40S", 2048, 71), (L7, "L40S", 128, 14), (L7, "L40S", 2048, 73),
          (GPTJ, "A100-80GB", 128, 12), (GPTJ, "A100-80GB", 2048, 129), (L7, "A100-80GB", 128, 16),
          (L7, "A100-80GB", 2048, 133))),
)

CASES_6_MULTI = (
    *(Case("request", model, hw, "fused", measured=tps, source=TRT_PERF_06, batch=b, prompt=p, generate=n, tp=tp,
           tables="trtllm-0.6", note="TensorRT-LLM v0.6.1", **_PREC[hw])
      for model, hw, tp, b, p, n, tps in (
          (F180, "H100-SXM", 4, 1024, 128, 128, 987), (F180, "H100-SXM", 8, 1024, 128, 2048, 724),
          (F180, "H100-SXM", 4, 64, 2048, 128, 112), (F180, "H100-SXM", 4, 64, 2048, 2048, 264),
          (GPTJ, "A100-80GB", 2, 120, 128, 2048, 2192), (GPTJ, "A100-80GB", 2, 64, 2048, 2048, 903),
          (L7, "A100-80GB", 2, 64, 2048, 2048, 782),
          (F180, "A100-80GB", 8, 1024, 128, 128, 232), (F180, "A100-80GB", 8, 128, 128, 2048, 180))),
    *(Case("prefill", F180, hw, "fused", measured=ms / 1e3, source=TRT_PERF_06, prompt=p, tp=8, tables="trtllm-0.6",
           note="TensorRT-LLM v0.5, first-token latency", **_PREC[hw])
      for hw, p, ms in (("H100-SXM", 128, 27), ("H100-SXM", 2048, 205), ("A100-80GB", 128, 61),
                        ("A100-80GB", 2048, 509))),
)


QWEN2 = ("QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst @ 5c4e69c (2024-06-11, the Qwen2 series): vLLM "
         "0.4.2, A100 80GB, batch 1, 2,048 generated, speed = 2,048 / end-to-end time")
TGI_SM = ("philschmid/text-generation-inference-tests @ f020075 results/sagemaker.csv (HF blog 'Llama 2 on Amazon "
          "SageMaker a Benchmark'): TGI 1.0.3, one virtual user, 50 new tokens, median time per token")
VLLM_2192 = ("vllm-project/vllm pull request #2192 (2023-12-19): benchmark_latency -tp 4 --input-len 256 --output-len "
             "256 --batch-size 64, 'L after' (custom all-reduce)")
VLLM_20155 = ("vllm-project/vllm pull request #20155 (2025-06-26): benchmark_latency RedHatAI/Meta-Llama-3.1-70B-"
              "Instruct-FP8, --input-len 8192 --output-len 1 --batch-size 1 --tensor-parallel-size 4, async TP off")
Q57 = str(Path(__file__).parent / "configs" / "published" / "Qwen--Qwen2-57B-A14B-Instruct.json")
GPTQ8 = dict(weight_dtype="int8", group_size=128)
_QUANT = {"GPTQ-Int8": GPTQ8, "GPTQ-Int4": GPTQ4, "AWQ": GPTQ4}
_LONG = " (max_model_len past the default: setting not given)"


def _qwen2(model, impl, tp, p, tps, quant="", setting=""):
    note = "vLLM 0.4.2" + (f" {quant}" if quant else "") + (f", {setting}" if setting else "") + \
        (_LONG if p > 32768 else "")
    return Case("request", model, "A100-80GB", impl, measured=_per_gpu(tps, tp), source=QWEN2, prompt=p,
                generate=2048, tp=tp, note=note, **BF16, **_QUANT.get(quant, {}))


CASES_7 = (
    *(_qwen2(Q7, "cuda-graph", 1, p, tps) for p, tps in ((1, 80.45), (6144, 76.41), (14336, 66.54), (30720, 55.83),
                                                          (63488, 41.20), (129024, 25.01))),
    *(_qwen2(Q7, "cuda-graph", 1, p, tps, quant) for p, quant, tps in (
        (1, "GPTQ-Int8", 114.32), (1, "GPTQ-Int4", 143.40), (1, "AWQ", 96.65),
        (30720, "GPTQ-Int8", 71.58), (30720, "GPTQ-Int4", 81.48), (30720, "AWQ", 63.62))),
    _qwen2(Q72, "fused", 1, 1, 29.60, "GPTQ-Int4", "enforce_eager"),
    Case("request", "meta-llama/Llama-2-7b-hf", "A10G", "fused", measured=1e3 / 30.962235, source=TGI_SM, prompt=128,
         generate=50, note="TGI 1.0.3 (ml.g5.2xlarge)", **FP16),
)

CASES_7_MULTI = (
    _qwen2(Q72, "fused", 2, 1, 17.68, setting="enforce_eager"),
    *(_qwen2(Q72, "cuda-graph", 4, p, tps) for p, tps in ((1, 30.01), (6144, 27.98), (14336, 21.81), (30720, 19.43),
                                                           (63488, 17.46), (129024, 11.70))),
    *(_qwen2(Q72, "cuda-graph", 2, p, tps, quant) for p, quant, tps in (
        (1, "GPTQ-Int8", 27.56), (1, "GPTQ-Int4", 42.82), (1, "AWQ", 27.73),
        (30720, "GPTQ-Int8", 18.69), (30720, "GPTQ-Int4", 23.12), (30720, "AWQ", 18.09))),
    *(_qwen2(Q57, "cuda-graph", 2, p, tps) for p, tps in ((1, 31.44), (6144, 31.77), (14336, 21.25), (30720, 20.24))),
    *(Case("request", model, hw, "fused", measured=_per_gpu(1e3 / ms, tp), source=TGI_SM, prompt=128, generate=50,
           tp=tp, note=f"TGI 1.0.3 ({box})", **FP16)
      for model, hw, box, tp, ms in (
          (L7, "A10G", "ml.g5.12xlarge", 4, 16.812526), (L13, "A10G", "ml.g5.12xlarge", 4, 21.002715),
          (L7, "A10G", "ml.g5.48xlarge", 8, 17.9153435), (L13, "A10G", "ml.g5.48xlarge", 8, 21.6059755),
          (L70, "A10G", "ml.g5.48xlarge", 8, 52.512794), (L7, "A100-40GB", "ml.p4d.24xlarge", 8, 23.501152),
          (L13, "A100-40GB", "ml.p4d.24xlarge", 8, 21.630097), (L70, "A100-40GB", "ml.p4d.24xlarge", 8, 41.348543))),
    Case("request", L70, "A100-80GB", "cuda-graph", measured=_per_gpu(64 * 256 / 14.57, 4), source=VLLM_2192,
         batch=64, prompt=256, generate=256, tp=4, note="vLLM 0.2.6+, custom all-reduce", **FP16),
    Case("prefill", L31_70, "H100-SXM", "cuda-graph", measured=0.38038901427062227, source=VLLM_20155, prompt=8192,
         tp=4, note="vLLM V1, FP8 (per tensor assumed), dummy weights", dtype="bf16", weight_dtype="fp8-t"),
)


VLLM_2542 = ("vllm-project/vllm pull request #2542 (2024-01-22): benchmark_latency Mixtral-8x7B-Instruct-v0.1 "
             "--input-len 1000 --output-len 50 -tp 8 --num-iters 100, 'This PR' (v0.3.0's fused MoE), H100")
VLLM_3240 = ("vllm-project/vllm pull request #3240 (2024-03-06): benchmark_latency Mixtral-8x7B-Instruct-v0.1 "
             "--input-len 1000 --output-len 50 -tp 2 --num-iters 100, 'Compared to master' (v0.3.3), A100-80GB")
VLLM_4002 = ("vllm-project/vllm pull request #4002 (2024-04-11): benchmark_latency Mixtral-8x22B, default lengths "
             "(32 in, 128 out), 'with config' (v0.4.1's tuned MoE tiles), A100-SXM4-80G")
MX22 = "mistralai/Mixtral-8x22B-v0.1"


def _latency(model, hw, tp, bs, p, n, seconds, source, note):
    return Case("request", model, hw, "cuda-graph", measured=_per_gpu(bs * n / seconds, tp), source=source, batch=bs,
                prompt=p, generate=n, tp=tp, note=note, **BF16)


CASES_8_MULTI = (
    *(_latency(MX, "H100-SXM", 8, bs, 1000, 50, s, VLLM_2542, "vLLM 0.3.0 (PR #2542)")
      for bs, s in ((1, 0.459), (2, 0.515), (4, 0.610), (8, 0.813), (16, 1.044), (32, 1.489), (64, 2.419))),
    *(_latency(MX, "A100-80GB", 2, bs, 1000, 50, s, VLLM_3240, "vLLM 0.3.3 (PR #3240's master)")
      for bs, s in ((1, 0.8453641083685216), (2, 1.1280082573764958), (4, 1.6140852882619947), (8, 2.348028304380132),
                    (16, 3.5489811494306194), (32, 5.627054951939499), (64, 9.691197272467543))),
    *(_latency(MX22, "A100-80GB", tp, bs, 32, 128, s, VLLM_4002, "vLLM 0.4.1 (PR #4002)")
      for tp, bs, s in ((4, 8, 5.4268179705676935), (4, 16, 6.107941208345195), (4, 32, 6.893939550562451),
                        (8, 8, 3.7083894722008455), (8, 16, 4.047313968433688), (8, 32, 4.3906944))),
)
# the same rows under --engine vllm-v0, its host time included (the preset's check on rows it was not written from)
CASES_8_V0 = tuple(dataclasses.replace(c, tables="vllm-v0", host=True) for c in CASES_8_MULTI)

VLLM_23197 = ("vllm-project/vllm pull request #23197 (2025-08-19): benchmark_latency --input-len 256 --output-len 32 "
              "--n 1 --num-iters 10, mean of 5 runs' Avg latency, 'H100 GPUs'")
SGLANG_2087 = ("sgl-project/sglang issue #2087 (2024-11-19): sglang.bench_latency --batch-size 32 --input 1024 "
               "--output 256 --model amd/Meta-Llama-3.1-70B-Instruct-FP8-KV --tp 8 --quantization fp8, 'On H100'")
TT_143 = ("tenstorrent/tt-inference-server issue #143 (2025-04-01): Qwen2.5-72B-Instruct on 2x H100, concurrency 1, "
          "mean TPOT")
RTN8 = dict(weight_dtype="int8", group_size=128)
FP8_T = dict(dtype="bf16", weight_dtype="fp8-t")

CASES_9 = (
    *(_latency(L31_8, "H100-SXM", 1, bs, 256, 32, s, VLLM_23197, "vLLM V1 (August 2025)")
      for bs, s in ((1, 0.236), (4, 0.260), (8, 0.284), (16, 0.336))),
    *(Case("request", L31_8, "H100-SXM", "cuda-graph", measured=bs * 32 / s, source=VLLM_23197, batch=bs, prompt=256,
           generate=32, note=note, **BF16, **q)
      for bs, s, note, q in ((1, 0.186, "vLLM V1, RTN int8 (Marlin)", RTN8), (16, 0.300, "vLLM V1, RTN int8 (Marlin)", RTN8),
                             (1, 0.154, "vLLM V1, RTN int4 (Marlin)", GPTQ4), (16, 0.267, "vLLM V1, RTN int4 (Marlin)", GPTQ4))),
)

CASES_9_MULTI = (
    *(_latency(L31_70, "H100-SXM", 4, bs, 256, 32, s, VLLM_23197, "vLLM V1 (August 2025), Llama-3.3-70B")
      for bs, s in ((1, 0.558), (4, 0.629), (8, 0.700), (16, 0.855))),
    Case("prefill", L31_70, "H100-SXM", "fused", measured=1.15925, source=SGLANG_2087, batch=32, prompt=1024, tp=8,
         note="SGLang 0.3 (November 2024), FP8 per tensor", **FP8_T),
    Case("decode", L31_70, "H100-SXM", "cuda-graph", measured=0.01364, source=SGLANG_2087, batch=32, context=1152,
         tp=8, note="SGLang 0.3 (November 2024), FP8 per tensor, median decode step", **FP8_T),
    *(Case("decode", Q72, "H100-SXM", "cuda-graph", measured=tpot, source=TT_143, context=ctx, tp=2,
           note="vLLM V1 assumed, concurrency 1, mean TPOT", **BF16)
      for ctx, tpot in ((192, 30.9e-3), (2112, 31.0e-3), (8256, 31.3e-3))),
)
AWQ_320 = ("casper-hansen/AutoAWQ pull request #320 (comment of 2024-01-29): examples/benchmark.py, 'GPU: NVIDIA "
           "A100-SXM4-80GB', IlyasMoutawwakil/vicuna-7b-v1.5-awq-gemm, Version: GEMM, batch 1")
LCPP_19053 = ("ggml-org/llama.cpp pull request #19053 (2026-01-23): llama-bench master column, 'NVIDIA RTX 6000 Ada "
              "Generation', llama 8B Q4_0")
TRT_5929 = ("NVIDIA/TensorRT-LLM issue #5929 (2025-07-10): DeepSeek-R1 FP8 on 8x H200 141GB, TP=8, EP=None, "
            "v0.21.0rc2 trtllm-serve, LLMPerf ITL p50")
SGL_33293 = ("sgl-project/sglang pull request #33293 (2026): python -m sglang.benchmark.one_batch, "
             "granite-3.1-3b-a800m-instruct, BF16 / TP1, 'GPU: NVIDIA H200', batch 1, input 128, output 64, "
             "baseline medians")
PUB = Path(__file__).parent / "configs" / "published"
DSR1 = str(PUB / "deepseek-ai--DeepSeek-R1.json")
GRANITE = str(PUB / "ibm-granite--granite-3.1-3b-a800m-instruct.json")
Q4_0 = dict(dtype="fp16", weight_dtype="int4", group_size=32, gguf="q4_0")
FP8_B = dict(dtype="bf16", weight_dtype="fp8-b128")

CASES_10 = (
    *(Case("prefill", L7, "A100-80GB", "fused", measured=p / tps, source=AWQ_320, prompt=p,
           note="AutoAWQ (January 2024) GEMM kernel, prefill", **AWQ4)
      for p, tps in ((128, 2058.66), (512, 2546.7), (1024, 5635.29))),
    *(Case("decode", L7, "A100-80GB", "fused", measured=1 / tps, source=AWQ_320, context=p + p // 2,
           note="AutoAWQ (January 2024) GEMM kernel, decode", **AWQ4)
      for p, tps in ((128, 93.2005), (512, 92.5384), (1024, 92.893))),
    Case("prefill", L31_8, "RTX-6000-Ada", "fused", measured=8096 / 8008.29, source=LCPP_19053, prompt=8096,
         note="llama.cpp (January 2026) pp8096, Q4_0", **Q4_0),
    Case("decode", L31_8, "RTX-6000-Ada", "cuda-graph", measured=1 / 168.87, source=LCPP_19053, context=64,
         note="llama.cpp (January 2026) tg128, Q4_0", **Q4_0),
    Case("prefill", GRANITE, "H200", "fused", measured=23.55e-3, source=SGL_33293, prompt=128,
         note="SGLang (2026) eager prefill, median", **BF16),
    Case("decode", GRANITE, "H200", "fused", measured=26.49e-3, source=SGL_33293, context=160,
         note="SGLang (2026) eager decode step, median", **BF16),
    Case("decode", GRANITE, "H200", "cuda-graph", measured=2.67e-3, source=SGL_33293, context=160,
         note="SGLang (2026) CUDA-graph decode step, median (workload assumed)", **BF16),
)

CASES_10_MULTI = tuple(
    Case("decode", DSR1, "H200", "fused", measured=itl, source=TRT_5929, batch=b, context=ctx, tp=8,
         note="TensorRT-LLM v0.21.0rc2 PyTorch backend, ITL p50", **FP8_B)
    for b, ctx, itl in ((1, 1900, 0.01378), (1, 8492, 0.01453), (8, 1900, 0.01818)))
INFX_870 = ("SemiAnalysisAI/InferenceX issue #870 (2026-03-05): DeepSeek-R1-0528, SGLang v0.5.7, FP8, TP 8, H200, "
            "1k/1k random (819-1,024 each), mean TPOT")
INFX_828 = ("SemiAnalysisAI/InferenceX issue #828 (2026-03-01): gpt-oss-120b, vLLM v0.15.1 (recipe of that date), "
            "H100, 1k/1k random (819-1,024 each), TPOT")
INFX_1053 = ("SemiAnalysisAI/InferenceX pull requests #1053/#1061 (2026-04-17): gpt-oss-120b on one MI300X, vLLM "
             "v0.17.0 ROCm, ISL/OSL 1,024 (819-1,024 each), median TPOT")
INFX_1092 = ("SemiAnalysisAI/InferenceX pull request #1092 (2026-04-19): gpt-oss-120b on 8x MI300X, TP 8, vLLM v0.17.0 "
             "ROCm, 1k/1k random (819-1,024 each), tokens/s a user (1,000 / TPOT), rounded")
TT_340 = ("tenstorrent/tt-inference-server issue #340 (2025-06-24, 2025-07-18): Qwen3 GPU reference runs on an A100, "
          "concurrency 1, mean TPOT")
TGI_1243 = ("huggingface/text-generation-inference pull request #1243 (late 2023): text-generation-benchmark "
            "--sequence-length 40, Llama-2-13b-chat-hf on an A100, prefill step average")
LMD_210 = ("InternLM/lmdeploy issue #210 (2023-08-08): Llama-2-7b-chat on one A10, batch 1, 20 in and 267 out, "
           "'about 27 ms per token' (TurboMind), 'about 34 ms per token' (Hugging Face)")
GPTOSS = str(PUB / "openai--gpt-oss-120b.json")
QWEN3_06 = str(Path(__file__).parent / "configs" / "qwen3-0.6b.json")
MXFP4 = dict(dtype="bf16", weight_dtype="mxfp4", group_size=32)
_MID = 922 + 461  # 1k/1k random: lengths uniform in 819-1,024 (mean 922), the middle of the output

CASES_11 = (
    *(Case("decode", GPTOSS, "MI300X", "cuda-graph", measured=tpot, source=INFX_1053, batch=b, context=_MID,
           note="vLLM v0.17.0 (ROCm), median TPOT", **MXFP4)
      for b, tpot in ((64, 31.4e-3), (128, 41.3e-3))),
    *(Case("decode", "Qwen/Qwen3-30B-A3B", "A100-80GB", "cuda-graph", measured=tpot, source=TT_340, context=ctx,
           note="vLLM V1 assumed, concurrency 1, mean TPOT", **BF16)
      for ctx, tpot in ((192, 9.6e-3), (1088, 9.8e-3), (8256, 10.6e-3))),
    Case("decode", QWEN3_06, "A100-80GB", "cuda-graph", measured=4.2e-3, source=TT_340, context=192,
         note="vLLM V1 assumed, concurrency 1, mean TPOT", **BF16),
    *(Case("prefill", L13, "A100-80GB", "fused", measured=s, source=TGI_1243, batch=b, prompt=40,
           note="TGI (late 2023), prefill step", **FP16)
      for b, s in ((100, 0.37077), (200, 0.76551))),
    Case("decode", L7, "A10", "fused", measured=27e-3, source=LMD_210, context=153,
         note="LMDeploy TurboMind (August 2023)", **FP16),
    Case("decode", L7, "A10", "hf-eager", measured=34e-3, source=LMD_210, context=153,
         note="Hugging Face transformers (August 2023)", **FP16, cache="concat"),
)

CASES_11_MULTI = (
    *(Case("decode", DSR1, "H200", "cuda-graph", measured=tpot, source=INFX_870, batch=b, context=_MID, tp=8,
           note="SGLang v0.5.7, mean TPOT", **FP8_B)
      for b, tpot in ((8, 12.8e-3), (16, 17.2e-3), (32, 25.6e-3), (64, 34.6e-3))),
    *(Case("decode", GPTOSS, "H100-SXM", "cuda-graph", measured=tpot, source=INFX_828, batch=b, context=_MID, tp=tp,
           note="vLLM v0.15.1, TPOT", **MXFP4)
      for tp, b, tpot in ((8, 4, 3.72e-3), (8, 16, 4.83e-3), (8, 64, 7.36e-3), (4, 64, 9.89e-3), (2, 64, 15.21e-3))),
    *(Case("decode", GPTOSS, "MI300X", "cuda-graph", measured=1 / tps, source=INFX_1092, batch=b, context=_MID, tp=8,
           note="vLLM v0.17.0 (ROCm), tokens/s a user (rounded)", **MXFP4)
      for b, tps in ((1, 249.0), (4, 234.0))),
)
GPU_BENCH = ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference README.md @ 00dd2bd (May 2024 snapshots, RunPod, CUDA "
             "12.1.1): llama-bench, Meta-Llama-3-8B, average tokens/s")
LCPP_16649 = ("ggml-org/llama.cpp pull request #16649 (2025-10-18): llama-bench master column, RTX 4090, gpt-oss 20B "
              "MXFP4 MoE")
LCPP_20835 = ("ggml-org/llama.cpp issue #20835 (2026-03-21): llama-bench build 557fe2d91 (8322), RTX 5090, CUDA 13.1, "
              "Qwen3-30B-A3B-Instruct UD-Q4_K_XL")
QWEN3_1536 = ("QwenLM/Qwen3 issue #1536 / vllm-project/vllm issue #20469 (2025-07-04): vLLM v0.9.1 --enforce-eager, "
              "Qwen3-14B-AWQ, one A100 80GB, concurrency 1, random 16,000 in / 200 out, mean TPOT")
GPUSTACK_4 = ("gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md @ 1dbc3b8: its SGLang v0.5.3.post3 and "
              "TensorRT-LLM v1.2.0rc1 rows, one H100 SXM, max concurrency 4, ShareGPT, median TPOT")
VLLM_23151 = ("vllm-project/vllm pull request #23151 (2025-08-19): Qwen3-30B-A3B bf16, one H100, vLLM main (stock "
              "fused-MoE configs), random 2,048 / 1,024, concurrency 10, mean TPOT")
MUSGRAVE = ("johnmusgrave.com, 'vLLM throughput-latency sweep on NVIDIA A100' (vLLM 0.23.0): Llama-3.1-8B-Instruct, "
            "one A100 40GB, concurrency 1, 1,024 in / 128 out, 'about 75 tokens/sec'")
VLLM_30326 = ("vllm-project/vllm issue #30326 (2025-12-09): gpt-oss-120b, 8x H200 TP 8, vLLM main before #29708, "
              "random 1,024 / 1,024, concurrency 8, 40 prompts, output throughput")
GPTOSS_20 = str(Path(__file__).parent / "configs" / "gpt-oss-20b.json")
QWEN3_14 = str(Path(__file__).parent / "configs" / "qwen3-14b.json")

CASES_12 = (
    *(Case("decode", L3_8, hw, "fused", measured=1 / tps, source=GPU_BENCH, context=ctx, note=f"llama.cpp {q} tg{n}",
           **FP16, **fmt)
      for hw, q, fmt, n, ctx, tps in (("RTX3090", "Q4_K_M", Q4_32, 512, 256, 115.42), ("RTX3090", "F16", {}, 512, 256, 47.40),
                                      ("RTX4090", "Q4_K_M", Q4_32, 512, 256, 130.58), ("RTX4090", "F16", {}, 512, 256, 54.84),
                                      ("RTX4090", "F16", {}, 8192, 4096, 50.88))),
    *(Case("prefill", L3_8, hw, "fused", measured=512 / tps, source=GPU_BENCH, prompt=512, note=f"llama.cpp {q} pp512",
           **FP16, **fmt)
      for hw, q, fmt, tps in (("RTX3090", "Q4_K_M", Q4_32, 4030.40), ("RTX3090", "F16", {}, 4444.65),
                              ("RTX4090", "Q4_K_M", Q4_32, 7138.99), ("RTX4090", "F16", {}, 9382.00))),
    *(Case("decode", GPTOSS_20, "RTX4090", "cuda-graph", measured=1 / tps, source=LCPP_16649, context=ctx,
           note=f"llama.cpp master (October 2025) MXFP4 tg{n}", **MXFP4)
      for n, ctx, tps in ((128, 64, 167.01), (32, 16, 170.99))),
    Case("decode", "Qwen/Qwen3-30B-A3B", "RTX5090", "cuda-graph", measured=1 / 219.49, source=LCPP_20835, context=64,
         note="llama.cpp b8322 UD-Q4_K_XL tg128", **FP16, **Q4_32),
    Case("prefill", "Qwen/Qwen3-30B-A3B", "RTX5090", "fused", measured=512 / 5544.32, source=LCPP_20835, prompt=512,
         note="llama.cpp b8322 UD-Q4_K_XL pp512", **FP16, **Q4_32),
    Case("decode", QWEN3_14, "A100-80GB", "fused", measured=20.63e-3, source=QWEN3_1536, context=16100,
         note="vLLM v0.9.1 --enforce-eager, AWQ, mean TPOT", **AWQ4),
    Case("decode", Q3_8, "H100-SXM", "cuda-graph", measured=7.14e-3, source=GPUSTACK_4, batch=4, context=344,
         note="SGLang v0.5.3.post3, concurrency 4, median TPOT", **BF16),
    Case("decode", str(PUB / "Qwen--Qwen3-8B-FP8.json"), "H100-SXM", "cuda-graph", measured=5.58e-3, source=GPUSTACK_4,
         batch=4, context=344, note="SGLang v0.5.3.post3, Qwen3-8B-FP8, concurrency 4, median TPOT", **FP8_B),
    Case("decode", Q3_8, "H100-SXM", "fused", measured=7.58e-3, source=GPUSTACK_4, batch=4, context=344,
         note="TensorRT-LLM v1.2.0rc1 (PyTorch backend), concurrency 4, median TPOT", **BF16),
    Case("decode", "Qwen/Qwen3-30B-A3B", "H100-SXM", "cuda-graph", measured=13.18e-3, source=VLLM_23151, batch=10,
         context=2048 + 508, note="vLLM main (August 2025), concurrency 10, mean TPOT", **BF16),
    Case("decode", L31_8, "A100-40GB", "cuda-graph", measured=1 / 75, source=MUSGRAVE, context=1088,
         note="vLLM 0.23.0, concurrency 1, 'about 75 tokens/sec'", **BF16),
)

CASES_12_MULTI = (
    Case("request", GPTOSS, "H200", "cuda-graph", measured=_per_gpu(1947.66, 8), source=VLLM_30326, batch=8,
         prompt=1024, generate=1024, tp=8, note="vLLM main (December 2025), concurrency 8, output tokens/s per GPU",
         **MXFP4),
)
# under their engine's preset: vLLM's, SGLang's, TensorRT-LLM's, llama.cpp's; vLLM's eager run has none
CASES_12_ENGINE = tuple(
    dataclasses.replace(c, tables={GPU_BENCH: "llama.cpp", LCPP_16649: "llama.cpp", LCPP_20835: "llama.cpp",
                                   VLLM_23151: "vllm", MUSGRAVE: "vllm", VLLM_30326: "vllm"}.get(c.source) or
                        ("trtllm" if "TensorRT" in c.note else "sglang"), host=True)
    for c in CASES_12 + CASES_12_MULTI if c.source != QWEN3_1536)

# under their engine's preset: SGLang's, vLLM's, transformers' (hf); TGI and TurboMind have none
CASES_11_ENGINE = tuple(
    dataclasses.replace(c, tables="sglang" if c.source == INFX_870 else "hf" if c.impl == "hf-eager" else "vllm",
                        host=True)
    for c in CASES_11 + CASES_11_MULTI if c.source not in (TGI_1243, LMD_210) or c.impl == "hf-eager")

# the rows of an engine with a preset, under it with its host time (the presets' check on rows they were not written
# from); AutoAWQ has no preset
CASES_10_ENGINE = tuple(
    dataclasses.replace(c, tables={TRT_5929: "trtllm", SGL_33293: "sglang", LCPP_19053: "llama.cpp"}[c.source],
                        host=True)
    for c in CASES_10 + CASES_10_MULTI if c.source != AWQ_320)

# the same rows under their engine's preset with its host time (the presets' check on rows they were not written from)
CASES_9_ENGINE = tuple(dataclasses.replace(c, tables="sglang" if c.source == SGLANG_2087 else "vllm", host=True)
                       for c in CASES_9 + CASES_9_MULTI)


LCPP_6017 = ("ggml-org/llama.cpp pull request #6017 (2024-03-12): llama-bench -ngl 99 -b 8192, one A100 80GB PCIe, "
             "codellama-7b F16, mean t/s")
LCPP_17505 = ("ggml-org/llama.cpp pull request #17505 (late 2025): llama-bench master column, RTX 4090, llama 8B Q4_0, "
              "micro-batch 1, pp512@d32768")
LCPP_7860 = ("ggml-org/llama.cpp pull request #7860 (June 2024): llama-bench master column, RTX 4090, llama 8B Q4_K_S, "
             "micro-batch 2048, pp2048")
VLLM_5238 = ("vllm-project/vllm pull request #5238 (2024-06-04): benchmark_serving Mixtral-8x7B-v0.1 FP8 on H100, "
             "prompt 1000, gen 50, qps 1, ITL (the PR's and 'was')")

CASES_13 = (
    *(Case("prefill", L7, "A100-80GB-PCIe", "fused", measured=p / tps, source=LCPP_6017, prompt=p,
           note=f"llama.cpp (March 2024) pp{p}, F16 (codellama-7b)", **FP16)
      for p, tps in ((512, 8668.24), (1024, 8251.25), (2048, 7592.36), (4096, 6574.66), (8192, 5112.25))),
    Case("decode", L7, "A100-80GB-PCIe", "fused", measured=1 / 74.77, source=LCPP_6017, context=64,
         note="llama.cpp (March 2024) tg128, F16 (codellama-7b)", **FP16),
    Case("decode", L3_8, "RTX4090", "cuda-graph", measured=1 / 98.14, source=LCPP_17505, context=32768 + 256,
         note="llama.cpp (late 2025) Q4_0, micro-batch 1 at depth 32,768", **FP16, **Q4_32, gguf="q4_0"),
    Case("prefill", L3_8, "RTX4090", "fused", measured=2048 / 5549.92, source=LCPP_7860, prompt=2048,
         note="llama.cpp (June 2024) Q4_K_S pp2048", **FP16, **Q4_32),
)

CASES_13_MULTI = tuple(
    Case("decode", MX, "H100-SXM", "cuda-graph", measured=ms * 1e-3, source=VLLM_5238, context=1025, tp=tp,
         note=f"vLLM V0 (June 2024) FP8, TP {tp}, qps 1, ITL{' (before the PR)' if was else ''}", **FP8_T)
    for tp, ms, was in ((2, 10.5, False), (4, 10.9, False), (2, 11.6, True), (4, 11.7, True)))
# under their engine's preset: llama.cpp's, vLLM V0's
CASES_13_ENGINE = tuple(dataclasses.replace(c, tables="vllm-v0" if c.source == VLLM_5238 else "llama.cpp", host=True)
                        for c in CASES_13 + CASES_13_MULTI)


# The seventh set's vLLM V0 rows (vLLM 0.4.2's, pull request #2192's) under --engine vllm-v0, its host time
# included: the preset was written after the set's first run showed those steps slower than the V1 model, from
# sources outside the set (engines.py: Vidur's A100 profile, vLLM pull request #3763), so these are seen.
SEEN_7_V0 = tuple(dataclasses.replace(c, tables="vllm-v0", host=True, int4_kernel="vllm-awq" if "AWQ" in c.note else "")
                  for c in CASES_7 + CASES_7_MULTI if c.note.startswith(("vLLM 0.4.2", "vLLM 0.2.6")))

# The first set's vLLM rows (vLLM of October 2023, January 2024 and its 2024 nightly CI, all V0) under the same
# preset: run once after the preset was committed, and not looked at while writing it: a check of it.
CHECK_V0 = tuple(dataclasses.replace(c, tables="vllm-v0", host=True) for c in CASES + CASES_MULTI if "vLLM" in c.note)


# The second set's first-token rows, re-read after its first run (seen, reported apart): transcribed as the
# prefill, they measure TurboMind v0.1.0a1's prefill of all but the last prompt token and then one decode step
# on it, which yields the first token (src/turbomind/models/llama/LlamaBatch.cc at v0.1.0a1: ContextDecode sets
# each input length to "missing - 1", "skip last input token (will process with decoder later)", and
# Generate() then looks up token step - 1 and runs the decoder; benchmark/profile_generation.py stops its clock
# at the first token the stream returns). v0.1.0 ran the whole prompt in one pass (PR #775), but the page's
# figures are v0.1.0a1's (its first line said so). Found by reading that code after the first run showed the
# 128-token rows 1.7-1.8x the prediction, so these are not held-out figures.
RE_READ_2 = tuple(Case("first-token", model, "A100-80GB", "fused", measured=s, source=LMDEPLOY, prompt=p,
                       note="LMDeploy TurboMind v0.1.0a1, first-token latency (re-read: P-1 prefilled, then a step)",
                       **FP16)
                  for model, p, s in ((L7, 128, 0.022), (L7, 2048, 0.139), (L13, 128, 0.040), (L13, 2048, 0.242)))
RE_READ_2_MULTI = tuple(Case("first-token", L70, "A100-80GB", "fused", measured=s, source=LMDEPLOY, prompt=p, tp=4,
                             note="LMDeploy TurboMind v0.1.0a1, first-token latency (re-read: P-1 prefilled, then a "
                                  "step)", **FP16)
                        for p, s in ((128, 0.074), (2048, 0.402)))



ARGONNE = ("argonne-lcf/LLM-Inference-Bench (arXiv:2411.00136) Plots/*.csv (September 2024): vLLM benchmark_latency, "
           "fp16, ignore_eos, mean of 30 runs of one generate() of a static batch, input length = output length")


def _argonne(model, hw, tp, bs, n, seconds, note, **kw):
    return Case("request", model, hw, "cuda-graph", measured=_per_gpu(bs * n / seconds, tp), source=ARGONNE, batch=bs,
                prompt=n, generate=n, tp=tp, note=note, **(kw or FP16))


Q2_7, Q2_72, L3_70 = "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-72B", "meta-llama/Meta-Llama-3-70B"
CASES_14 = (
    *(_argonne(L3_8, "H100-SXM", 1, bs, n, s, "vLLM (September 2024)")
      for bs, n, s in ((1, 128, 0.9939330658666686), (1, 2048, 16.3022289824), (16, 1024, 11.024687729899984),
                       (64, 128, 1.6882608920667432))),
    *(Case("prefill", model, "H100-SXM", "cuda-graph", measured=s, source=ARGONNE, batch=16, prompt=1024,
           note="vLLM (September 2024), output 1", **FP16)
      for model, s in ((L3_8, 0.42566500790417194), (M7, 0.42516071242280307))),
    *(_argonne(L3_8, "H100-SXM", 1, bs, n, s, "vLLM (September 2024), FP8 W8A8, fp8 KV", **FP8)
      for bs, n, s in ((1, 1024, 6.144760839175433), (16, 1024, 8.905026635853574), (64, 128, 1.4434360191226006))),
    _argonne(L3_8, "H100-SXM", 1, 64, 2048, 65.51213897718117, "vLLM (September 2024), fp8 KV", dtype="fp16",
             kv_dtype="fp8"),
    *(_argonne(model, "MI300X", 1, bs, n, s, "vLLM v0.6.1 ROCm")
      for model, bs, n, s in ((L3_8, 16, 1024, 14.870041463000234), (MX, 1, 2048, 29.655885364991263))),
)
CASES_14_MULTI = (
    *(_argonne(model, "H100-SXM", tp, bs, n, s, "vLLM (September 2024)")
      for model, tp, bs, n, s in ((Q2_7, 2, 1, 1024, 6.431115485800062), (M7, 4, 16, 1024, 7.098035354500038),
                                  (L3_70, 4, 1, 128, 2.4624011069999843), (L3_70, 4, 16, 1024, 24.695051089999954),
                                  (L3_70, 4, 64, 2048, 80.21554280686638), (Q2_72, 4, 1, 1024, 20.52318881896402))),
    *(_argonne(model, "MI300X", 8, bs, n, s, "vLLM v0.6.1 ROCm")
      for model, bs, n, s in ((L3_70, 1, 1024, 22.17779670500022), (MX, 16, 1024, 16.006695757008856))),
)
CASES_14_ENGINE = tuple(dataclasses.replace(c, tables="vllm-v0", host=True) for c in CASES_14 + CASES_14_MULTI)

QWEN15 = ("QwenLM/Qwen2.5 docs/source/benchmark/hf_infer.rst @ 14544eb (Qwen1.5): A100 80GB, batch 1, 2,048 generated, "
          "HF transformers with Flash Attention 2.5.6, speed (w FA2) = 2,048 / the whole request")
DMATORA_11 = ("dmatora/LLM-inference-speed-benchmarks issue 11 (2024-08-26): llama.cpp build 93bc383, RTX 3080, "
              "Mistral Instruct 7B Q4_K_M, llama-bench")
Q15_7 = str(Path(__file__).parent / "configs" / "qwen1.5-7b.json")
CASES_15 = (
    *(Case("request", Q15_7, "A100-80GB", "hf-eager", measured=tps, source=QWEN15, prompt=p, generate=2048,
           note=f"HF transformers (early 2024), FA2, {name}", cache="concat", **dt, **q)
      for name, dt, q, rows_ in (
          ("bf16", BF16, {}, ((1, 37.07), (6144, 29.29), (14336, 19.93), (30720, 12.04))),
          ("GPTQ-Int4", BF16, GPTQ4, ((1, 38.73), (6144, 34.33), (14336, 22.04), (30720, 12.82))),
          ("AWQ", FP16, GPTQ4, ((1, 32.59), (6144, 29.13), (14336, 19.98), (30720, 12.10))))
      for p, tps in rows_),
    Case("decode", M7, "RTX3080", "cuda-graph", measured=1 / 119.66, source=DMATORA_11, context=64,
         note="llama.cpp 93bc383 Q4_K_M tg128", **FP16, **Q4_32),
    Case("prefill", M7, "RTX3080", "fused", measured=512 / 4031.87, source=DMATORA_11, prompt=512,
         note="llama.cpp 93bc383 Q4_K_M pp512", **FP16, **Q4_32),
)

OB_LLAMA = ("huggingface/optimum-benchmark examples/running-llamas/experiments/A100-80GB @ 6a25a6d (2023-10-31): "
            "A100-SXM4-80GB, torch 2.1.0, transformers 4.34.1, fp16, greedy generate of exactly the new tokens")
OB_EARLIER = ("huggingface/optimum-benchmark examples/running-llamas/experiments/A100-80GB @ 09886e9 (2023-10-31, "
              "the folder's runs before 6a25a6d): A100-SXM4-80GB, torch 2.1.0, transformers 4.34.1, fp16")
OB_MISTRAL = ("huggingface/optimum-benchmark examples/running-mistrals/experiments/A100-80GB @ 09886e9 (2023-10-31): "
              "A100-SXM4-80GB, torch 2.1.0, transformers 4.35.0.dev0 (GPTQ: 4.34.1), fp16")
BNB_README = ("bitsandbytes-foundation/bitsandbytes benchmarking/README.md @ 81e6345 (2024-12-05): optimum-benchmark "
              "6e6b1036, transformers 4.46.3, torch 2.5.1; Mean Latency (s) = per-token latency of the batch")
Q25_3 = str(Path(__file__).parent / "configs" / "qwen2.5-3b-instruct.json")
Q25_32 = str(Path(__file__).parent / "configs" / "qwen2.5-32b-instruct.json")
_OB_EAGER = dict(FP16, cache="concat", attention="unfused")


def _optimum(model, source, name, prompt, new, rows_, **q):
    """optimum-benchmark's folders of one model and weights: (batch, forward latency s, generate tokens/s) each a
    prefill of batch x prompt and a request of batch x new tokens."""
    return tuple(c for b, fwd, tps in rows_ for c in (
        Case("prefill", model, "A100-80GB", "hf-eager", measured=fwd, source=source, batch=b, prompt=prompt,
             note=f"optimum-benchmark, transformers eager, {name}, forward of the prompt", **_OB_EAGER, **q),
        Case("request", model, "A100-80GB", "hf-eager", measured=tps, source=source, batch=b, prompt=prompt,
             generate=new, note=f"optimum-benchmark, transformers eager, {name}, generate", **_OB_EAGER, **q)))


CASES_16 = (
    *_optimum(L7, OB_LLAMA, "fp16", 256, 512,
              ((1, 0.0325, 38.8), (2, 0.0574, 74.7), (4, 0.106, 149), (8, 0.202, 293), (16, 0.402, 474))),
    *_optimum(L7, OB_LLAMA, "GPTQ (TheBloke/Llama-2-7B-GPTQ)", 256, 512,
              ((1, 0.0457, 35.1), (2, 0.0703, 68.3), (4, 0.121, 135), (8, 0.22, 207), (16, 0.415, 333)), **GPTQ4),
    *_optimum(L7, OB_EARLIER, "fp16", 512, 1000,
              ((1, 0.0585, 36.4), (2, 0.111, 74.1), (4, 0.213, 144), (8, 0.421, 243), (16, 0.846, 316))),
    *_optimum(L7, OB_EARLIER, "GPTQ (TheBloke/Llama-2-7B-GPTQ)", 512, 1000,
              ((1, 0.0713, 35.5), (2, 0.127, 69), (4, 0.23, 120), (8, 0.437, 169), (16, 0.852, 246)), **GPTQ4),
    *_optimum(M7, OB_MISTRAL, "fp16", 512, 1000,
              ((1, 0.0633, 35.3), (2, 0.118, 68), (4, 0.233, 137), (8, 0.467, 236), (16, 0.937, 319))),
    *_optimum(M7, OB_MISTRAL, "GPTQ (TheBloke/Mistral-7B-v0.1-GPTQ)", 512, 1000,
              ((1, 0.0828, 31.7), (2, 0.142, 62.9), (4, 0.261, 111), (8, 0.486, 164), (16, 0.963, 242)), **GPTQ4),
    *_optimum(M7, OB_MISTRAL, "AWQ (ybelkada/test-mistral-7b-v0.1-awq)", 512, 1000,
              ((1, 0.164, 31.2), (2, 0.321, 62.9), (4, 0.638, 122), (8, 1.27, 229), (16, 2.52, 312)), **GPTQ4),
    # bitsandbytes' README, its 16-bit rows: a decode step of the batch at context 64 + 100 / 2 (assumed lengths)
    *(Case("decode", model, hw, "hf-eager", measured=s, source=BNB_README, batch=b, context=114, cache="concat",
           note=f"transformers 4.46.3 generate, {name}", **dt)
      for model, hw, name, dt, rows_ in (
          (Q25_3, "T4", "FP16", FP16, ((1, 0.0390), (8, 0.0422), (32, 0.0601))),
          (L31_8, "RTX4090", "BF16", BF16, ((1, 0.0211), (8, 0.0239), (32, 0.0304))),
          (L31_8, "H100-SXM", "BF16", BF16, ((1, 0.0244), (8, 0.0255), (32, 0.0261))),
          (Q25_32, "H100-SXM", "BF16", BF16, ((1, 0.0508), (8, 0.0525), (32, 0.0547))))
      for b, s in rows_),
)


MODELOPT = ("NVIDIA/TensorRT-Model-Optimizer benchmark.md @ 111b2da (2025-01-08): nvidia-modelopt v0.21.1, TensorRT-LLM "
            "v0.15, trtllm-bench, H200, input 2048, output 128, Tokens/sec of the engine")
VLLM_FP8KV = ("vllm-project/vllm-project.github.io _posts/2026-04-22-fp8-kvcache.md @ 78672b0 (2026-04-24): vLLM "
              "v0.19.1, FlashAttention-3, one H100")
INT4_AWQ = dict(dtype="bf16", weight_dtype="int4", group_size=128)
_MODELOPT_ROWS = (  # model, format, batch, Tokens/sec (the engine's, output)
    (L31_8, "BF16", 1, 173.80), (L31_8, "BF16", 8, 803.11), (L31_8, "BF16", 64, 1679.74),
    (L31_8, "FP8", 1, 245.03), (L31_8, "FP8", 8, 1051.17), (L31_8, "FP8", 64, 2190.93),
    (L31_8, "INT4 AWQ", 1, 231.75), (L31_8, "INT4 AWQ", 8, 599.72), (L31_8, "INT4 AWQ", 64, 1392.78),
    (L31_70, "BF16", 1, 45.81), (L31_70, "BF16", 8, 182.61), (L31_70, "BF16", 64, 401.50),
    (L31_70, "FP8", 1, 43.46), (L31_70, "FP8", 8, 182.07), (L31_70, "FP8", 64, 420.64),
    (L31_70, "INT4 AWQ", 1, 44.10), (L31_70, "INT4 AWQ", 8, 93.98), (L31_70, "INT4 AWQ", 64, 176.68))
_MODELOPT_DT = {"BF16": BF16, "FP8": FP8, "INT4 AWQ": INT4_AWQ}
GPT_OSS_20B = str(Path(__file__).parent / "configs" / "gpt-oss-20b.json")


def _modelopt(multi: bool):
    return tuple(Case("request", model, "H200", "fused", measured=_per_gpu(tps, tp), source=MODELOPT, batch=b,
                      prompt=2048, generate=128, tp=tp, tables="trtllm", note=f"TensorRT-LLM v0.15 (ModelOpt 0.21), {fmt}",
                      **_MODELOPT_DT[fmt])
                 for model, fmt, b, tps in _MODELOPT_ROWS
                 for tp in [2 if model == L31_70 and fmt == "BF16" else 1] if (tp > 1) == multi)


CASES_17 = (
    *_modelopt(False),
    # the vLLM blog's fitted ITL at concurrency 1: slope x prompt + intercept (ms), a step at context prompt + 64
    *(Case("decode", L31_8, "H100-SXM", "cuda-graph", measured=(slope * p + icpt) / 1e3, source=VLLM_FP8KV,
           context=p + 64, note=f"vLLM v0.19.1, {kv} KV, fitted ITL at concurrency 1", dtype="bf16", kv_dtype=kv)
      for kv, slope, icpt in (("bf16", 4.37e-05, 6.44), ("fp8", 2.37e-05, 6.58)) for p in (1024, 65536)),
    # its throughput runs: median ITL at concurrency 8, ~20k in and ~2k out
    *(Case("decode", model, "H100-SXM", "cuda-graph", measured=ms / 1e3, source=VLLM_FP8KV, batch=8, context=21000,
           note=f"vLLM v0.19.1, {kv} KV, median ITL at concurrency 8", kv_dtype=kv, **dt)
      for model, dt, kv, ms in ((L31_8, BF16, "bf16", 15.18), (L31_8, BF16, "fp8", 12.93),
                                (GPT_OSS_20B, MXFP4, "bf16", 8.09), (GPT_OSS_20B, MXFP4, "fp8", 7.90))),
)

CASES_17_MULTI = _modelopt(True)

GEMLITE = ("pytorch/pytorch.github.io _posts/2025-01-21-accelerating-llm-inference.md @ 838362f (PyTorch blog, "
           "2025-01-21): SGLang feb2b76, torch.compile, PyTorch 2.5.1, 8xH100, random 1024 in / 512 out, the last "
           "logged decode throughput")
INT4_G64 = dict(dtype="bf16", weight_dtype="int4", group_size=64)
FP8_CH = dict(dtype="bf16", weight_dtype="fp8-ch")
_GEMLITE_ROWS = (  # format, TP, batch, decode tokens/s of the whole batch
    ("bf16", 1, 1, 131), ("int4 g64", 1, 1, 255), ("fp8 per row", 1, 1, 166),
    ("bf16", 1, 32, 2799), ("int4 g64", 1, 32, 3241), ("fp8 per row", 1, 32, 3586),
    ("bf16", 4, 32, 5575), ("int4 g64", 4, 32, 6334), ("fp8 per row", 4, 32, 6159))
_NM_DT = {"bf16": BF16, "int4 g64": INT4_G64, "fp8 per row": FP8_CH, "FP8-dynamic": FP8_CH,
          "w4a16": dict(dtype="bf16", weight_dtype="int4", group_size=128)}


def _nm(card: str) -> str:
    return (f"huggingface.co/neuralmagic/{card} README.md (model card, February 2025): vLLM 0.7.2, GuideLLM "
            "single stream, whole-request latency (s)")


NM_8 = _nm("DeepSeek-R1-Distill-Llama-8B-quantized.w8a8")
NM_70 = _nm("DeepSeek-R1-Distill-Llama-70B-FP8-dynamic")
NM_32 = _nm("DeepSeek-R1-Distill-Qwen-32B-quantized.w4a16")
_NM_ROWS = (  # source, model, GPU, GPUs (TP), format, prompt, generated, latency (s)
    (NM_8, L31_8, "RTX-A6000", 1, "bf16", 256, 1024, 23.6), (NM_8, L31_8, "RTX-A6000", 1, "bf16", 4096, 512, 12.7),
    (NM_8, L31_8, "A100-80GB", 1, "bf16", 256, 1024, 12.1), (NM_8, L31_8, "A100-80GB", 1, "bf16", 4096, 512, 6.5),
    (NM_8, L31_8, "H100-SXM", 1, "bf16", 256, 1024, 7.6), (NM_8, L31_8, "H100-SXM", 1, "bf16", 4096, 512, 4.1),
    (NM_8, L31_8, "H100-SXM", 1, "FP8-dynamic", 256, 1024, 5.7),
    (NM_8, L31_8, "RTX-A6000", 1, "w4a16", 256, 1024, 9.1), (NM_8, L31_8, "A100-80GB", 1, "w4a16", 256, 1024, 6.4),
    (NM_8, L31_8, "H100-SXM", 1, "w4a16", 256, 1024, 5.6),
    (NM_70, L31_70, "RTX-A6000", 4, "bf16", 256, 1024, 57.2),
    (NM_70, L31_70, "A100-80GB", 2, "bf16", 256, 1024, 50.4), (NM_70, L31_70, "A100-80GB", 2, "bf16", 4096, 512, 27.0),
    (NM_70, L31_70, "H100-SXM", 2, "bf16", 256, 1024, 30.0), (NM_70, L31_70, "H100-SXM", 2, "bf16", 4096, 512, 16.1),
    (NM_70, L31_70, "H100-SXM", 2, "FP8-dynamic", 256, 1024, 21.1),
    (NM_70, L31_70, "A100-80GB", 1, "w4a16", 256, 1024, 35.3), (NM_70, L31_70, "H100-SXM", 1, "w4a16", 256, 1024, 31.2),
    (NM_32, Q25_32, "RTX-A6000", 2, "bf16", 256, 1024, 49.9),
    (NM_32, Q25_32, "A100-80GB", 1, "bf16", 256, 1024, 44.0),
    (NM_32, Q25_32, "H100-SXM", 1, "bf16", 256, 1024, 26.6), (NM_32, Q25_32, "H100-SXM", 1, "bf16", 4096, 512, 14.3),
    (NM_32, Q25_32, "H100-SXM", 1, "FP8-dynamic", 256, 1024, 17.3),
    (NM_32, Q25_32, "A100-80GB", 1, "w4a16", 256, 1024, 17.4), (NM_32, Q25_32, "H100-SXM", 1, "w4a16", 256, 1024, 16.1))


def _set18(multi: bool):
    return (*(Case("decode", L31_8, "H100-SXM", "cuda-graph", measured=b / tps, source=GEMLITE, batch=b, context=1490,
                   tp=tp, note=f"SGLang feb2b76 + torch.compile, {fmt}, last logged decode throughput", **_NM_DT[fmt])
              for fmt, tp, b, tps in _GEMLITE_ROWS if (tp > 1) == multi),
            *(Case("request", model, hw, "cuda-graph", measured=_per_gpu(out / s, tp), source=src, prompt=p,
                   generate=out, tp=tp, note=f"vLLM 0.7.2 (GuideLLM single stream), {fmt}", **_NM_DT[fmt])
              for src, model, hw, tp, fmt, p, out, s in _NM_ROWS if (tp > 1) == multi))


CASES_18 = _set18(False)
CASES_18_MULTI = _set18(True)

NM_Q7 = _nm("DeepSeek-R1-Distill-Qwen-7B-quantized.w4a16")
Q25_7 = "Qwen/Qwen2.5-7B"
CASES_19 = tuple(  # the card's single-stream table: GPU, format, prompt, generated, latency (s)
    Case("request", Q25_7, hw, "cuda-graph", measured=out / s, source=NM_Q7, prompt=p, generate=out,
         note=f"vLLM 0.7.2 (GuideLLM single stream), {fmt}", **_NM_DT[fmt])
    for hw, fmt, p, out, s in (
        ("RTX-A6000", "bf16", 256, 1024, 22.6), ("RTX-A6000", "bf16", 4096, 512, 12.1),
        ("RTX-A6000", "w4a16", 256, 1024, 8.6), ("RTX-A6000", "w4a16", 4096, 512, 5.2),
        ("A100-80GB", "bf16", 256, 1024, 11.5), ("A100-80GB", "bf16", 4096, 512, 6.2),
        ("A100-80GB", "w4a16", 256, 1024, 6.1),
        ("H100-SXM", "bf16", 256, 1024, 7.5), ("H100-SXM", "FP8-dynamic", 256, 1024, 5.3),
        ("H100-SXM", "w4a16", 256, 1024, 5.4)))

DL_QB = ("DerekLiu35/huggingface-quantization-benchmarking-code runs/<run>/benchmark_report.md @ 063dcfb (A100 runs) "
         "and c75115e (H100 runs), March-April 2025: optimum-benchmark, transformers 4.47-4.50 eager generate, batch "
         "1, 64-token prompt, 64 new tokens")
_DL_INT4_TORCHAO = dict(dtype="bf16", weight_dtype="int4", group_size=128)
CASES_20 = tuple(  # run, model, GPU, format, prefill mean (s), decode mean (s, 63 steps)
    c for run, model, hw, name, dt, kernel, pre, dec in (
        ("cuda_pytorch_llama", L31_8, "A100-80GB", "bf16", BF16, "", 0.026585, 1.622815),
        ("llama8b_fpgemm", L31_8, "H100-SXM", "FBGEMM fp8", FP8_CH, "", 0.030225, 1.862123),
        ("llama70b_fbgemm", L31_70, "H100-SXM", "FBGEMM fp8", FP8_CH, "", 0.074791, 4.630073),
        ("llama_awq", L31_8, "A100-80GB", "AWQ int4 (exllama)", AWQ4, "exllama", 0.032447, 1.462082),
        ("llama_torchao_int4wo", L31_8, "A100-80GB", "torchao int4wo", _DL_INT4_TORCHAO, "", 0.059973, 2.522302))
    for c in (
        Case("prefill", model, hw, "hf-eager", measured=pre, source=DL_QB, prompt=64, cache="concat",
             note=f"optimum-benchmark {run}, transformers eager, {name}, prefill of 64", int4_kernel=kernel, **dt),
        Case("decode", model, hw, "hf-eager", measured=dec / 63, source=DL_QB, context=96, cache="concat",
             note=f"optimum-benchmark {run}, transformers eager, {name}, decode step", int4_kernel=kernel, **dt)))

COMPANION = ("quack-ai/companion scripts/ollama/benchmark_result.csv @ 2cacaef (2024-03-27): Ollama 0.1.29, one "
             "request at a time, generation_mean = generated tokens / eval_duration over 20 chat requests")
GGML_CI_V100 = ("ggml-org/ci llama.cpp/4d/0383321184aadf91968d9e3c6a45286ed2473b/ggml-4-x86-cuda-v100 @ a11e66d "
                "(2023-10-07): llama.cpp build 1344 on a Tesla V100-PCIE-16GB, main -n 256 --ignore-eos, eval time "
                "over 255 runs")
_COMPANION_ROWS = (  # model, Ollama tag, GPU, generation_mean (tokens/s)
    (L7, "deepseek-coder:6.7b-instruct-q4_K_M", "A10", 78.68),
    (L7, "opencodeinterpreter-ds:6.7b-Q4_K_M", "A10", 77.26),
    (M7, "dolphin-mistral:7b-v2.6-dpo-laser-q4_K_M", "A10", 73.9),
    (L7, "deepseek-coder:6.7b-instruct-q4_K_M", "A10G", 79.62),
    (L7, "opencodeinterpreter-ds:6.7b-Q4_K_M", "A10G", 79.02),
    (M7, "dolphin-mistral:7b-v2.6-dpo-laser-q4_K_M", "A10G", 75.91),
    (L7, "deepseek-coder:6.7b-instruct-q4_K_M", "L4", 49.97),
    (L7, "opencodeinterpreter-ds:6.7b-Q4_K_M", "L4", 49.39),
    (M7, "dolphin-mistral:7b-v2.6-dpo-laser-q4_K_M", "L4", 47.27))
_V100_ROWS = (  # llama.cpp type, weights, eval time (ms) over 255 runs
    ("F16", {}, 4825.95), ("Q8_0", dict(weight_dtype="int8", group_size=32, gguf="q8_0"), 3233.86),
    ("Q4_0", dict(Q4_32, gguf="q4_0"), 2200.77), ("Q4_K", Q4_32, 2468.47))
CASES_21 = (
    *(Case("decode", model, hw, "fused", measured=1 / tps, source=COMPANION, context=256, attention="unfused",
           note=f"Ollama 0.1.29 {tag}", **FP16, **Q4_32)
      for model, tag, hw, tps in _COMPANION_ROWS),
    *(Case("decode", L7, "V100-SXM2", "fused", measured=ms / 1e3 / 255, source=GGML_CI_V100, context=136,
           attention="unfused", note=f"llama.cpp build 1344 {name} (OpenLLaMA-7B-v2), V100 PCIe", **FP16, **q)
      for name, q, ms in _V100_ROWS),
)

ACCELMARK = ("FreedomIntelligence/AccelMark @ 5797fc4, suite C sustained: vLLM AsyncLLMEngine, Llama-3.1-8B-Instruct, "
             "8 requests in flight for 15 min, ShareGPT (prompt median ~280, output <= 512), output tokens/s")
AWQ_276 = ("casper-hansen/AutoAWQ issue #276 (2023-12-26): examples/benchmark.py, Llama-2-7b-chat, A100 80G, batch 1, "
           "prefill and decode tokens/s")
AWQ_645 = ("casper-hansen/AutoAWQ issue #645 (2024-11-15): autoawq 0.2.6, examples/benchmark.py, llama2-13b-chat AWQ, "
           "A800-SXM4-40GB, batch 1, prefill and decode tokens/s")
_ACCELMARK_ROWS = (  # GPU, vLLM, format, impl, mean generated, output tokens/s
    ("A100-40GB", "0.7.3", "w4a16", "cuda-graph", 348, 813.5), ("A100-40GB", "0.7.3", "bf16", "cuda-graph", 356, 491.9),
    ("A100-80GB", "0.7.3", "w4a16", "cuda-graph", 348, 757.0), ("A100-80GB", "0.7.3", "bf16", "cuda-graph", 357, 537.9),
    ("A100-80GB", "0.20.1", "w4a16", "fused", 349, 437.3), ("A100-80GB", "0.20.1", "bf16", "cuda-graph", 358, 706.9))
_AWQ_276_ROWS = (  # format, prompt = decode length, prefill tokens/s (None: left out), decode tokens/s
    ("AWQ", 32, None, 96.7343), ("AWQ", 64, 2024.28, 88.3774), ("AWQ", 128, 3300.77, 94.6881),
    ("AWQ", 256, 3738.89, 96.6029), ("AWQ", 512, 3900.86, 94.6219), ("AWQ", 1024, 3810.2, 92.6713),
    ("AWQ", 2048, 3363.05, 75.8573), ("AWQ", 4096, 2934.01, 77.3857),
    ("FP16", 32, None, 38.2089), ("FP16", 64, 2105.81, 40.4185), ("FP16", 128, 3073.42, 36.7522))
_AWQ_645_ROWS = ((32, None, 71.37), (64, 1322.2, 71.36), (128, 1551.88, 70.27), (256, 1782.02, 67.64))


def _awq_bench(source, model, hw, kernel, label, fmt, n, pre, dec):
    awq = fmt == "AWQ"
    kw = dict(AWQ4, int4_kernel=kernel) if awq else dict(FP16, cache="concat")
    impl = "fused" if awq else "hf-eager"
    out = [Case("decode", model, hw, impl, measured=1 / dec, source=source, context=n + n // 2,
                note=f"{label} {fmt} decode, prompt {n}", **kw)]
    if pre is not None:
        out.append(Case("prefill", model, hw, impl, measured=n / pre, source=source, prompt=n,
                        note=f"{label} {fmt} prefill of {n}", **kw))
    return out


CASES_22 = (
    *(Case("request", L31_8, hw, impl, measured=tps, source=ACCELMARK, batch=8, prompt=280, generate=out,
           note=f"vLLM {v}, {fmt}, 8 in flight", **_NM_DT[fmt])
      for hw, v, fmt, impl, out, tps in _ACCELMARK_ROWS),
    *(c for fmt, n, pre, dec in _AWQ_276_ROWS
      for c in _awq_bench(AWQ_276, L7, "A100-80GB", "autoawq-0.1", "AutoAWQ (December 2023)", fmt, n, pre, dec)),
    *(c for n, pre, dec in _AWQ_645_ROWS
      for c in _awq_bench(AWQ_645, L13, "A100-40GB", "autoawq", "autoawq 0.2.6, A800-SXM4-40GB", "AWQ", n, pre, dec)),
)

FT_GUIDE = ("NVIDIA/FasterTransformer docs/gpt_guide.md @ df4a753 (GPT-175B and 89B: FasterTransformer 4.0, 2021-04; "
            "6.7B: 2021-09; 20B: 5.0, 2022-04): 8 x A100-SXM4-80GB (NVSwitch), FP16, latency of one static batch")
MINF = ("microsoft/MInference experiments/README.md @ fb56c91 (2024-06-07): one A100 80GB, "
        "Llama-3-8B-Instruct-Gradient-1048k bf16, benchmark_e2e.py: one forward, batch 1, dense FlashAttention-2")
_FT = Path(__file__).parent / "configs" / "fastertransformer"
GPT175, GPT89, GPT20, GPT67 = (str(_FT / f"gpt-{n}.json") for n in ("175b", "89b", "20b", "6.7b"))
_FT_ROWS = (  # (model, TP, prompt, output, ((batch, latency ms), ...)): docs/gpt_guide.md's FT columns
    (GPT175, 8, 128, 8, ((1, 488.86), (8, 749.86), (32, 1547.44))),
    (GPT175, 8, 512, 32, ((1, 1719.96), (8, 2629.97), (16, 3706.23))),
    (GPT89, 8, 128, 8, ((1, 279.44), (8, 377.50), (32, 786.57))),
    (GPT89, 8, 512, 32, ((1, 887.52), (8, 1415.02), (16, 1952.2))),
    *((GPT20, tp, 128, 20, rows_) for tp, rows_ in (
        (1, ((1, 566), (8, 740), (64, 2157))), (2, ((1, 362), (8, 487), (64, 1379))),
        (4, ((1, 254), (8, 333), (64, 832))), (8, ((1, 217), (8, 267), (64, 634))))),
    *((GPT20, tp, 80, 200, rows_) for tp, rows_ in (
        (1, ((1, 5609), (8, 5838), (64, 8290))), (2, ((1, 3532), (8, 3984), (64, 6003))),
        (4, ((1, 2438), (8, 2741), (64, 3815))), (8, ((1, 2053), (8, 2268), (64, 3173))))),
    (GPT67, 1, 128, 8, ((1, 98.29), (8, 162.51), (64, 718.07))),
    (GPT67, 1, 512, 32, ((1, 384.70), (8, 699.62), (64, 3306.41))))
_FT_CASES = tuple(
    Case("request", model, "A100-80GB", "fused", measured=b * out / (ms / 1e3) / tp, source=FT_GUIDE, batch=b,
         prompt=prompt, generate=out, tp=tp, attention="unfused",
         note=f"FasterTransformer, batch {b}, {prompt} in, {out} out, {ms:g} ms", **FP16)
    for model, tp, prompt, out, rows_ in _FT_ROWS for b, ms in rows_)
CASES_23 = tuple(c for c in _FT_CASES if c.tp == 1) + tuple(
    Case("prefill", L3_8, "A100-80GB", "hf-eager", measured=s, source=MINF, prompt=n, cache="concat",
         note=f"MInference's dense FlashAttention-2 forward of {n:,} tokens", **BF16)
    for n, s in ((50_000, 8.52933), (100_000, 24.88319), (200_000, 79.39184), (300_000, 169.62441)))
CASES_23_MULTI = tuple(c for c in _FT_CASES if c.tp > 1)
# The rule above takes batch 128 from GPT-20B's block of 128 in, 20 out (it ran at every TP size; only the block of 80
# in, 200 out runs out of memory at 128 on one GPU); the rows were transcribed with 64 there by a slip, found by a
# review after the set's first run. Its four batch-128 rows, run after and apart (no prediction of them was seen
# before): one on one GPU, three on several.
_FT_MISSED = tuple(
    Case("request", GPT20, "A100-80GB", "fused", measured=128 * 20 / (ms / 1e3) / tp, source=FT_GUIDE, batch=128,
         prompt=128, generate=20, tp=tp, attention="unfused",
         note=f"FasterTransformer, batch 128, 128 in, 20 out, {ms:g} ms (the rule's row, run after the set)", **FP16)
    for tp, ms in ((1, 3830), (2, 2365), (4, 1439), (8, 1072)))
CASES_23_MISSED, CASES_23_MISSED_MULTI = _FT_MISSED[:1], _FT_MISSED[1:]

# The twenty-fourth set (rules in the module's docstring)
SGL_COOK = ("sgl-project/sgl-cookbook @ 7b5bd9c (2026-05-01) docs/autoregressive/*: sglang.bench_serving random, 10 "
            "prompts, concurrency 1, mean lengths from its printed totals, median TPOT and TTFT")
SGL_GPTOSS = ("lm-sys/lm-sys.github.io blog/2025-08-27-gpt-oss.md @ dbd47f4 (LMSYS, 'SGLang for gpt-oss') and "
              "sgl-project/sglang benchmark/gpt_oss/README.md @ 1dc322c: SGLang v0.5.1.post3, bench_one_batch_server "
              "batch 1, 1,024 in / 512 out, decode tokens/s after the first token")
SGL_GIST = ("gist BenHamm/78563d0d0a08d7cb61b4737392633384 (2026-02-16): SGLang v0.5.8.post1 on 8x B200, "
            "bench_serving random 1K / 1K, concurrency 1, TPOT")
VULTR_B200 = ("docs.vultr.com inference-cookbook, NVIDIA HGX B200 vLLM Optimization Cookbook (2026-03-11): vLLM "
              "0.16.0, vllm bench serve random 2,048 / 512, concurrency 1, TPOT and TTFT")
GLM4_0414 = ("THUDM/GLM-4 inference/README.md @ 3f79b54 (table of 2025-04-14): transformers >= 4.51.3 eager generate, "
             "one H100 80GB, batch 1, BF16, random-token prompt, 128 new tokens, mean of 3 runs")
GLM4_2024 = ("THUDM/GLM-4 basic_demo/README_en.md @ 8102212 (2024-06-06): transformers 4.40.0 with the model's own "
             "code, one A100-SXM4-80GB, batch 1, BF16, random-token prompt, up to 512 new tokens, mean of 3 runs")
RTX4090_Q35 = ("aaronzhfeng/gpu-inference benchmarks/rtx-4090.md @ 414c57c (2026-03-10): vLLM 0.17.0, one RTX 4090, "
               "one non-streaming chat request, 128 new tokens, end-to-end latency")
GLM4_9B = str(PUB / "zai-org--GLM-4-9B-0414.json")
GLM4_9B_CHAT = str(PUB / "zai-org--glm-4-9b-chat-hf.json")
ERNIE_21 = str(PUB / "baidu--ERNIE-4.5-21B-A3B-PT.json")
NANO_30 = str(PUB / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json")  # the FP8 checkpoint's sizes
QWEN35_4 = str(PUB / "Qwen--Qwen3.5-4B.json")
Q3_235 = str(PUB / "Qwen--Qwen3-235B-A22B.json")
Q3_NEXT = str(PUB / "Qwen--Qwen3-Next-80B-A3B-Instruct.json")
SCOUT = str(PUB / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json")
MAVERICK = str(PUB / "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json")
FP8_T_B = dict(dtype="bf16", weight_dtype="fp8-t")
# the cookbook's random runs: the mean prompt, and a decode step at the mean prompt plus half the mean output
_C1, _C2, _C3 = 610 + 211, 610 + 2223, 4194 + 211  # 1000/1000, 1000/8000, 8000/1000


def _cook(model, hw, tp, fmt, decode, prefill, note):
    """A cookbook page's rows: (context, median TPOT s) decode steps and (prompt, median TTFT s) prefills."""
    return (*(Case("decode", model, hw, "cuda-graph", measured=s, source=SGL_COOK, context=ctx, tp=tp,
                   note=f"{note}, median TPOT", **fmt) for ctx, s in decode),
            *(Case("prefill", model, hw, "cuda-graph", measured=s, source=SGL_COOK, prompt=p, tp=tp,
                   note=f"{note}, median TTFT", **fmt) for p, s in prefill))


def _glm(model, hw, source, rows_, new, note):
    """The GLM-4 stress tables: (prompt, TTFT s, decode tokens/s) at batch 1, a decode step at prompt + new / 2."""
    return tuple(c for p, ttft, tps in rows_ for c in (
        Case("first-token", model, hw, "hf-eager", measured=ttft, source=source, prompt=p, cache="concat",
             note=f"{note}, time to the first streamed text", **BF16),
        Case("decode", model, hw, "hf-eager", measured=1 / tps, source=source, context=p + new // 2, cache="concat",
             note=f"{note}, decode speed", **BF16)))


CASES_24 = (
    *_glm(GLM4_9B, "H100-SXM", GLM4_0414, ((1000, 0.05, 44.4), (8000, 0.39, 39.0), (32000, 2.29, 18.7),
                                            (100000, 6.80, 14.1)), 128, "GLM-4-9B-0414, transformers 4.51"),
    *_glm(GLM4_9B_CHAT, "A100-80GB", GLM4_2024, ((1000, 0.2, 27.8), (8000, 0.8, 31.8), (32000, 4.3, 14.4),
                                                  (128000, 38.1, 3.4)), 512, "glm-4-9b-chat, transformers 4.40"),
    *_cook(ERNIE_21, "MI300X", 1, BF16, ((_C1, 4.09e-3), (_C2, 4.13e-3), (_C3, 4.22e-3)),
           ((610, 36.81e-3), (4194, 72.30e-3)), "SGLang 0.5.7, ERNIE-4.5-21B-A3B-PT"),
    Case("decode", NANO_30, "B200", "cuda-graph", measured=4.36e-3, source=SGL_GIST, context=_C1,
         note="SGLang v0.5.8.post1, NVIDIA-Nemotron-3-Nano-30B-A3B-FP8, TPOT", **FP8_T_B),
    Case("request", QWEN35_4, "RTX4090", "cuda-graph", measured=128 / 1.31, source=RTX4090_Q35, prompt=30,
         generate=128, note="vLLM 0.17.0, Qwen3.5-4B, one request, 1.31 s", **BF16),
)

CASES_24_MULTI = (
    *(Case("decode", GPTOSS, hw, "cuda-graph", measured=1 / tps, source=SGL_GPTOSS, context=1024 + 256, tp=tp,
           note=f"SGLang v0.5.1.post3, gpt-oss-120b {'MXFP4' if fmt is MXFP4 else 'bf16'}, decode tokens/s",
           **fmt)
      for hw, tp, fmt, tps in (("B200", 4, MXFP4, 416.02), ("B200", 4, BF16, 315.63), ("H100-SXM", 8, MXFP4, 318.53),
                               ("H100-SXM", 8, BF16, 293.12))),
    *_cook(L31_70, "A100-80GB", 8, BF16, ((_C1, 18.63e-3), (_C3, 18.81e-3)), ((610, 131.77e-3), (4194, 318.02e-3)),
           "SGLang 0.5.6, Llama-3.1-70B"),
    *_cook(Q3_235, "B200", 8, BF16, ((_C1, 10.12e-3), (_C2, 10.24e-3), (_C3, 10.33e-3)),
           ((610, 92.18e-3), (610, 109.36e-3), (4194, 114.85e-3)), "SGLang 0.5.6, Qwen3-235B-A22B-Instruct-2507"),
    *_cook(DSR1, "B200", 8, FP8_B, ((_C1, 9.15e-3), (_C2, 9.20e-3), (_C3, 9.27e-3)),
           ((610, 140.76e-3), (610, 126.19e-3), (4194, 154.96e-3)), "SGLang 0.5.6.post1, DeepSeek-R1-0528"),
    *_cook("deepseek-ai/DeepSeek-V3", "MI300X", 8, FP8_B, ((_C1, 23.90e-3), (_C2, 24.51e-3), (_C3, 25.05e-3)),
           ((610, 213.58e-3), (610, 156.19e-3), (4194, 481.38e-3)), "SGLang 0.5.7, DeepSeek-V3.1"),
    *_cook(SCOUT, "MI300X", 8, BF16, ((_C1, 7.40e-3),), ((610, 68.57e-3),), "SGLang 0.5.9, Llama-4-Scout"),
    *_cook(MAVERICK, "MI300X", 8, BF16, ((_C1, 5.96e-3),), ((610, 57.45e-3),), "SGLang 0.5.9, Llama-4-Maverick"),
    *_cook(GPTOSS, "B200", 8, MXFP4, ((332 + 106, 2.31e-3),), ((332, 31.79e-3),), "SGLang 0.5.6, gpt-oss-120b, ShareGPT"),
    *_cook(Q3_NEXT, "B200", 8, BF16, ((338 + 108, 6.17e-3),), ((338, 132.88e-3),),
           "SGLang 0.5.6, Qwen3-Next-80B-A3B, ShareGPT"),
    Case("decode", GPTOSS, "B200", "cuda-graph", measured=2.41e-3, source=SGL_GIST, context=_C1, tp=8,
         note="SGLang v0.5.8.post1, gpt-oss-120b MXFP4, TPOT", **MXFP4),
    Case("decode", NANO_30, "B200", "cuda-graph", measured=2.91e-3, source=VULTR_B200, context=2048 + 256, tp=2,
         note="vLLM 0.16.0, NVIDIA-Nemotron-3-Nano-30B-A3B-FP8, TPOT", **FP8_T_B),
    Case("prefill", NANO_30, "B200", "cuda-graph", measured=362e-3, source=VULTR_B200, prompt=2048, tp=2,
         note="vLLM 0.16.0, NVIDIA-Nemotron-3-Nano-30B-A3B-FP8, TTFT", **FP8_T_B),
)
# MiniMax-M2 on 4 MI300Xs (TP 4, no expert parallelism), left out of the set by a slip and run after its first run
CASES_24_MISSED_MULTI = _cook(str(PUB / "MiniMaxAI--MiniMax-M2.json"), "MI300X", 4, FP8_B, ((_C1, 22.24e-3),),
                              ((610, 385.23e-3),), "SGLang 0.5.7, MiniMax-M2 (the row transcribed late)")
# under their engine's preset with its host time: SGLang's, vLLM's, transformers' (hf)
CASES_24_ENGINE = tuple(
    dataclasses.replace(c, tables="hf" if c.impl == "hf-eager" else "vllm" if c.source in (VULTR_B200, RTX4090_Q35)
                        else "sglang", host=True)
    for c in CASES_24 + CASES_24_MULTI)

# llama.cpp before its FlashAttention (pull request #5021, merged 2024-04-30) ran attention unfused: K·Q written in
# fp32, a softmax kernel over it, the PV matmul reading it (llm_build_kqv), a prompt in micro-batches of 512 (its
# n_batch, then n_ubatch, default), which the sets above ran as one fused call. Re-read after the thirteenth set's
# first run showed its A100 prompts 1.7-3.0x the predicted time, rising with the prompt (seen, reported apart): the
# rows of builds before that date, the first set's (January 2024), the fourth set's llama.cpp 15499eb (March 2024)
# and the thirteenth's pull request #6017 (March 2024). The calibration takes them so. Rows of later builds ran
# FlashAttention only where -fa was given (off by default until late August 2025, when it became auto); their
# sources mostly do not print it, so they stay as transcribed: fused (a choice, not a finding).
PRE_FA = (LLAMA_CPP, LCPP_6017)


def _pre_fa(cases):
    return tuple(dataclasses.replace(c, attention="unfused", ubatch=512,
                                     note=c.note + " (unfused attention: re-read)")
                 if c.source in PRE_FA or "15499eb" in c.note else c for c in cases)


RE_READ_13 = tuple(c for c in _pre_fa(CASES + CASES_4 + CASES_13) if c.attention == "unfused")

# The sets above ran every int4 matmul as a Marlin-like kernel at the 16-bit GEMM's rate. The engines of 2023 and
# early 2024 did not (predict.INT4_KERNELS): AutoAWQ's GEMM kernel levels off near 58 TFLOP/s on an A100 and takes
# most of a 16-row tile's time for one row (predict.AWQ_GEMM: SqueezeBits/QUICK's kernel table), and past a
# threshold of rows the AWQ engines and AutoGPTQ's exllama kernels dequantize the whole weight to 16 bits before a
# 16-bit GEMM. Re-read after the sixteenth set's AWQ prompts ran 3.5-4.3x the predicted time (seen, reported
# apart): the rows of engines that ran those kernels, each by its version -- AutoAWQ 0.1.6 (its README; the GEMM
# kernel at every size), AutoAWQ's main of 2024-01-29 (pull request #320's baseline, after #316 of 2024-01-24: the
# 16-bit GEMM from 1,024 tokens), vLLM 0.4.2's `awq` (awq_marlin came in v0.5.3: the 16-bit GEMM from 256 tokens),
# transformers with AutoAWQ beside FlashAttention 2.5.6 (March 2024 or later: AutoAWQ 0.2, assumed) and
# transformers 4.35 of October 2023 (AutoAWQ 0.1.5 or before, released by then); GPTQ through transformers 4.34-4.3x
# and optimum (AutoGPTQ's exllama kernel, their default: dequantized from 8 rows, matmul_recons_thd in AutoGPTQ
# 0.4.2-0.7.0), AutoGPTQ 0.5.0's exllamav2 backend (past 50 rows, its config.h) and turboderp's ExLlama (its
# matmul_recons_thd = 8). vLLM's GPTQ rows ran Marlin (0.4.2's _verify_quantization) and its v0.9.1 AWQ row
# awq_marlin: unchanged; so are ExLlamaV2's own decode steps (one row a step).
INT4_KERNEL = ((AUTOAWQ, "AWQ", "autoawq-0.1"), (AWQ_320, "AWQ", "autoawq"), (QWEN2, "AWQ", "vllm-awq"),
               (QWEN15, "AWQ", "autoawq"), (QWEN15, "GPTQ", "exllama"), (OB_MISTRAL, "AWQ", "autoawq-0.1"),
               (OB_MISTRAL, "GPTQ", "exllama"), (OB_LLAMA, "GPTQ", "exllama"), (OB_EARLIER, "GPTQ", "exllama"),
               (OPTIMUM, "exllamav2", "exllamav2"), (EXL1, "GPTQ", "exllama"))


def _int4(cases):
    def kernel(c):
        return next((k for source, word, k in INT4_KERNEL if c.source == source and word in c.note), "")

    return tuple(dataclasses.replace(c, int4_kernel=kernel(c), note=c.note + f" (--int4-kernel {kernel(c)}: re-read)")
                 if kernel(c) else c for c in cases)


# The range's third calibration source (benchmarks/calibrate.py): every set above as it is run, the second set's
# first-token rows as re-read. Each set was first run before it calibrated anything (its first-run figures are
# in docs/validation.md); from the calibration on, all of them are seen for the range. A set added later is
# first run as it stands, then joins these.
CALIBRATION_SETS = {1: (_pre_fa(CASES), CASES_MULTI), 2: (CASES_2 + RE_READ_2, CASES_2_MULTI + RE_READ_2_MULTI),
                    3: (_int4(CASES_3), CASES_3_MULTI), 4: (_int4(_pre_fa(CASES_4)), CASES_4_MULTI),
                    5: (_int4(CASES_5), CASES_5_MULTI), 6: (CASES_6, CASES_6_MULTI), 7: (_int4(CASES_7), _int4(CASES_7_MULTI)),
                    8: ((), CASES_8_MULTI), 9: (CASES_9, CASES_9_MULTI), 10: (_int4(CASES_10), CASES_10_MULTI),
                    11: (CASES_11, CASES_11_MULTI), 12: (CASES_12, CASES_12_MULTI),
                    13: (_pre_fa(CASES_13), CASES_13_MULTI), 14: (CASES_14, CASES_14_MULTI),
                    15: (_int4(CASES_15), ()), 16: (_int4(CASES_16), ()),
                    17: (CASES_17, CASES_17_MULTI), 18: (CASES_18, CASES_18_MULTI),
                    19: (CASES_19, ()), 20: (CASES_20, ()), 21: (CASES_21, ()),
                    22: (CASES_22, ()),
                    23: (CASES_23 + CASES_23_MISSED, CASES_23_MULTI + CASES_23_MISSED_MULTI),
                    24: (CASES_24, CASES_24_MULTI + CASES_24_MISSED_MULTI)}  # set: (one GPU, several)
# every int4 row above re-read with its engine's kernel: as the calibration takes them
RE_READ_INT4 = tuple(c for one, several in CALIBRATION_SETS.values() for c in one + several
                     if c.int4_kernel and "re-read" in c.note)  # not the sets that named their kernel as written
CALIBRATION_ONE = sum((one for one, _ in CALIBRATION_SETS.values()), ())
CALIBRATION_SEVERAL = sum((several for _, several in CALIBRATION_SETS.values()), ())

def _run(cases):
    """rows(), a case roofcalc refuses reported with its one-line reason rather than stopping the table."""
    from roofcalc.errors import RoofcalcError

    done, refused = [], []
    for c in cases:
        try:
            done += rows([c])
        except RoofcalcError as exc:
            refused.append((c, str(exc)))
    return done, refused


if __name__ == "__main__":
    for title, cases in (("One GPU", CASES), ("More than one GPU (tensor parallelism)", CASES_MULTI),
                         ("Second set, one GPU", CASES_2), ("Second set, more than one GPU", CASES_2_MULTI),
                         ("Third set, one GPU", CASES_3), ("Third set, more than one GPU", CASES_3_MULTI),
                         ("Fourth set, one GPU", CASES_4), ("Fourth set, more than one GPU", CASES_4_MULTI),
                         ("Fifth set, one GPU", CASES_5), ("Fifth set, more than one GPU", CASES_5_MULTI),
                         ("Sixth set, one GPU", CASES_6), ("Sixth set, more than one GPU", CASES_6_MULTI),
                         ("Seventh set, one GPU", CASES_7), ("Seventh set, more than one GPU", CASES_7_MULTI),
                         ("Eighth set, more than one GPU", CASES_8_MULTI),
                         ("Eighth set under --engine vllm-v0, its host time included", CASES_8_V0),
                         ("Ninth set, one GPU", CASES_9), ("Ninth set, more than one GPU", CASES_9_MULTI),
                         ("Ninth set under its engine's preset (--engine vllm, sglang), its host time included",
                          CASES_9_ENGINE),
                         ("Tenth set, one GPU", CASES_10), ("Tenth set, more than one GPU", CASES_10_MULTI),
                         ("Tenth set under its engine's preset (--engine trtllm, sglang, llama.cpp), its host time "
                          "included", CASES_10_ENGINE),
                         ("Eleventh set, one GPU", CASES_11), ("Eleventh set, more than one GPU", CASES_11_MULTI),
                         ("Eleventh set under its engine's preset (--engine sglang, vllm, hf), its host time included",
                          CASES_11_ENGINE),
                         ("Twelfth set, one GPU", CASES_12), ("Twelfth set, more than one GPU", CASES_12_MULTI),
                         ("Twelfth set under its engine's preset (--engine vllm, sglang, trtllm, llama.cpp), its host "
                          "time included", CASES_12_ENGINE),
                         ("Thirteenth set, one GPU", CASES_13), ("Thirteenth set, more than one GPU", CASES_13_MULTI),
                         ("Thirteenth set under its engine's preset (--engine llama.cpp, vllm-v0), its host time "
                          "included", CASES_13_ENGINE),
                         ("Fourteenth set, one GPU", CASES_14), ("Fourteenth set, more than one GPU", CASES_14_MULTI),
                         ("Fourteenth set under --engine vllm-v0, its host time included", CASES_14_ENGINE),
                         ("Fifteenth set, one GPU", CASES_15),
                         ("Sixteenth set, one GPU", CASES_16),
                         ("Seventeenth set, one GPU", CASES_17), ("Seventeenth set, more than one GPU", CASES_17_MULTI),
                         ("Eighteenth set, one GPU", CASES_18), ("Eighteenth set, more than one GPU", CASES_18_MULTI),
                         ("Nineteenth set, one GPU", CASES_19),
                         ("Twentieth set, one GPU", CASES_20),
                         ("Twenty-first set, one GPU", CASES_21),
                         ("Twenty-second set, one GPU", CASES_22),
                         ("Twenty-third set, one GPU", CASES_23), ("Twenty-third set, more than one GPU", CASES_23_MULTI),
                         ("Twenty-third set, the rule's four rows transcribed late (run after the set, unseen)",
                          CASES_23_MISSED + CASES_23_MISSED_MULTI),
                         ("Twenty-fourth set, one GPU", CASES_24), ("Twenty-fourth set, more than one GPU", CASES_24_MULTI),
                         ("Twenty-fourth set under its engine's preset (--engine sglang, vllm, hf), its host time "
                          "included", CASES_24_ENGINE),
                         ("Twenty-fourth set, MiniMax-M2's rows transcribed late (run after the set, unseen)",
                          CASES_24_MISSED_MULTI),
                         ("Seventh set's vLLM V0 rows under --engine vllm-v0, its host time included (written after "
                          "the set's first run: seen)", SEEN_7_V0),
                         ("The first set's vLLM rows under --engine vllm-v0, its host time included (a check of the "
                          "preset, run after it was written)", CHECK_V0),
                         ("Second set's first-token rows, re-read after its first run (seen, not held out)",
                          RE_READ_2 + RE_READ_2_MULTI),
                         ("llama.cpp's rows from before its FlashAttention, re-read with unfused attention after the "
                          "thirteenth set's first run (seen, not held out)", RE_READ_13),
                         ("The int4 rows of engines that ran AutoAWQ's GEMM kernel or dequantized their weights "
                          "(AutoGPTQ's exllama kernels), re-read with them after the sixteenth set's first run (seen, "
                          "not held out)", RE_READ_INT4)):
        done, refused = _run(cases)
        print(f"\n{title}:\n")
        print(markdown(done) if done else "(no row ran)")
        for c, why in refused:
            print(f"refused: {c.model} on {c.tp}x {c.hw} ({c.note}): {why}")
