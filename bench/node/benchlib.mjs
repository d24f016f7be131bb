// Shared by the Node benchmarks (not a test): the package under test, timing
// with medians over repeats, and the machine-readable rows bench/report.py
// turns into BENCHMARKS.md (the row format is described in bench/python/benchlib.py).
//
// HW_NODE_PACKAGE: the npm package directory to load (make builds a release
// addon into target/bench-node); BENCH_QUICK=1 for fewer repeats, BENCH_SMOKE=1
// for one tiny sample (asserts nothing about speed).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const SMOKE = process.env.BENCH_SMOKE === '1'
export const QUICK = SMOKE || process.env.BENCH_QUICK === '1'
export const REPEATS = SMOKE ? 1 : QUICK ? 3 : 7
const SAMPLE_S = SMOKE ? 0.002 : QUICK ? 0.05 : 0.2
const RUN = process.env.HW_BENCH_RUN || ''
const RESULTS = process.env.HW_BENCH_RESULTS || join(ROOT, 'target', 'bench-results')
const INPUTS = process.env.HW_BENCH_INPUTS || join(ROOT, 'target', 'bench-inputs')

export const require = createRequire(import.meta.url)
export const PKG = resolve(process.env.HW_NODE_PACKAGE || join(ROOT, 'bindings-node'))
export const hw = require(join(PKG, 'index.js'))

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

function calibrate(fn) {
  fn()
  let n = 1
  let took
  for (;;) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < n; i++) fn()
    took = Number(process.hrtime.bigint() - start)
    if (took >= (SAMPLE_S * 1e9) / 4 || SMOKE) break
    n *= 2
  }
  return Math.max(1, Math.floor((n * SAMPLE_S * 1e9) / Math.max(took, 1)))
}

/** Median ns per call of a synchronous `fn` over REPEATS samples of about SAMPLE_S seconds. */
export function medianNs(fn) {
  const loops = calibrate(fn)
  const samples = []
  for (let r = 0; r < REPEATS; r++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < loops; i++) fn()
    samples.push(Number(process.hrtime.bigint() - start) / loops)
  }
  return median(samples)
}

/** The same for an async `fn`, awaited one call after another. */
export async function medianNsAsync(fn) {
  await fn()
  let n = 1
  let took
  for (;;) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < n; i++) await fn()
    took = Number(process.hrtime.bigint() - start)
    if (took >= (SAMPLE_S * 1e9) / 4 || SMOKE) break
    n *= 2
  }
  const loops = Math.max(1, Math.floor((n * SAMPLE_S * 1e9) / Math.max(took, 1)))
  const samples = []
  for (let r = 0; r < REPEATS; r++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < loops; i++) await fn()
    samples.push(Number(process.hrtime.bigint() - start) / loops)
  }
  return median(samples)
}

export const value = (name, v, unit) => ({ name, value: v, unit })
export const ratioGoal = (x, what) => ({ metric: 'ratio', op: '>=', value: x, text: `>= ${x}x ${what}` })

export function loadInputs(name) {
  const path = join(INPUTS, `${name}.json`)
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch (err) {
    throw new Error(`${path} is missing or unreadable: run \`python bench/inputs.py\` (make bench-inputs) first (${err.message})`)
  }
}

export function packageVersion(name) {
  return require(join(ROOT, 'bench', 'node', 'node_modules', name, 'package.json')).version
}

export class Results {
  constructor(suite) {
    this.suite = suite
    this.rows = []
  }

  row(area, kase, ours, peer = null, { better = 'lower', goal = null, note = '', repeats = REPEATS, headline = false } = {}) {
    const r = { area, case: kase, ours, peer, better, goal, note, repeats, headline, suite: this.suite, run: RUN, load: loadavg()[0] }
    this.rows.push(r)
    let line = `  [${area}] ${kase}: ${ours.name} ${ours.value.toPrecision(4)} ${ours.unit}`
    if (peer) {
      const ratio = better === 'lower' ? peer.value / ours.value : ours.value / peer.value
      line += `; ${peer.name} ${peer.value.toPrecision(4)} ${peer.unit}; ours ${ratio.toPrecision(3)}x`
    }
    console.log(line)
  }

  fact(area, text) {
    this.rows.push({ kind: 'fact', area, text, suite: this.suite, run: RUN })
    console.log(`  [${area}] ${text}`)
  }

  write() {
    mkdirSync(RESULTS, { recursive: true })
    const path = join(RESULTS, `${this.suite}.jsonl`)
    writeFileSync(path, this.rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
    console.log(`wrote ${this.rows.length} rows to ${path}`)
  }
}
