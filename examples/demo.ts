// The demo behind `make demo-ts`: the session of examples/demo.py, in TypeScript,
// with the npm package (bindings-node). A scripted model
// (examples/support/transcript.json, shared with the Python demo) makes the tool
// calls of one support ticket through the real governor on the embedded
// defaults (memory state, no API key, no network beyond 127.0.0.1): a schema
// refusal, PII redacted, an injection in a fetched page neutralised, a code tool
// in the Monty sandbox, a refund approved by finance, an e-mail refused by the
// trifecta rule, a rug-pulled tool refused by its pin, and the audit trail.
//
// Build and run: `make demo-ts` (tsc compiles this file into examples/.build/).
// Options: --report PATH (what happened, as JSON), --color auto|always|never.
// There is no live-model mode here; the Python demo has it (--live).

import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'

import { load, LoadError, type CallResult, type Harness, type JsonValue, type Principal, type Run } from 'harnessweaver'

const HERE = resolve(__dirname, '..')
const ROOT = resolve(HERE, '..')
const SOURCE = join(HERE, 'support')
const WEB = join(SOURCE, 'web')
const WIDTH = 96

type Args = { [key: string]: JsonValue }
interface Step {
  actor: 'model' | 'finance' | 'supply_chain'
  say?: string
  tool?: string
  args?: Args
  approve?: string
  rug_pull?: { tool: string; description: string }
}
interface Transcript {
  agent: Principal
  approver: Principal
  tenant?: string
  ticket: string
  steps: Step[]
  reply: string
}
interface Order {
  [key: string]: JsonValue
}

// --- output ---------------------------------------------------------------------------------------

const USAGE = `usage: node examples/.build/demo.js [--report PATH] [--color auto|always|never] [--transcript PATH]

The TypeScript twin of examples/demo.py: replays examples/support/transcript.json
through the governor (npm package harnessweaver). Run it with \`make demo-ts\`.`

class Style {
  constructor(readonly enabled: boolean) {}
  private wrap(code: string, t: string): string {
    return this.enabled ? `\x1b[${code}m${t}\x1b[0m` : t
  }
  bold = (t: string): string => this.wrap('1', t)
  dim = (t: string): string => this.wrap('2', t)
  green = (t: string): string => this.wrap('32', t)
  red = (t: string): string => this.wrap('31', t)
  yellow = (t: string): string => this.wrap('33', t)
  cyan = (t: string): string => this.wrap('36', t)
}

/** One line of `text`, centred on the first placeholder the governor wrote when the whole does not fit. */
function excerpt(text: string, width = WIDTH - 10): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  if (flat.length <= width) return flat
  const marks = ['[removed', '[EMAIL]', '[PHONE]'].map((m) => flat.indexOf(m)).filter((i) => i >= 0)
  let start = marks.length ? Math.max(0, Math.min(...marks) - Math.floor(width / 3)) : 0
  start = Math.min(start, flat.length - width + 1)
  const piece = flat.slice(start, start + width - 1)
  return (start ? '…' : '') + piece + (start + width - 1 < flat.length ? '…' : '')
}

/** `text` in lines of at most WIDTH characters, indented by three spaces (Python's textwrap.fill). */
function fill(text: string): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && 3 + line.length + 1 + word.length > WIDTH) {
      lines.push('   ' + line)
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  if (line) lines.push('   ' + line)
  return lines.join('\n')
}

/** JSON as Python's json.dumps prints it by default (`", "` and `": "`), so both demos print alike. */
function pyJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`).join(', ')}}`
  return JSON.stringify(v)
}

function counts(report: CallResult['output_report']): string {
  const redactions = report?.redactions ?? {}
  return Object.keys(redactions)
    .sort()
    .map((k) => `${k} x${redactions[k]}`)
    .join(', ')
}

// --- the fetch service ----------------------------------------------------------------------------

interface FetchRecord {
  path: string
  url: string
  status: number
  idempotency_key: boolean
}

/** The shop's web-fetch service on 127.0.0.1: a POST of `{"url": ...}` returns that page from examples/support/web/. */
function page(url: string): Buffer | null {
  const m = /^https:\/\/([a-z0-9.-]+)\/([A-Za-z0-9_./-]+)$/.exec(url)
  if (!m || m[2].includes('..')) return null
  const path = join(WEB, m[1], `${m[2]}.html`)
  return existsSync(path) ? readFileSync(path) : null
}

async function startFetchService(requests: FetchRecord[]): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      let url = ''
      try {
        url = String(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}').url ?? '')
      } catch {
        url = ''
      }
      const body = req.method === 'POST' && req.url === '/fetch' ? page(url) : null
      requests.push({ path: req.url ?? '', url, status: body ? 200 : 404, idempotency_key: Boolean(req.headers['idempotency-key']) })
      res.writeHead(body ? 200 : 404, { 'Content-Type': body ? 'text/html; charset=utf-8' : 'text/plain' })
      res.end(body ?? 'not found')
    })
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  const port = (server.address() as AddressInfo).port
  return { port, close: () => new Promise<void>((ok) => server.close(() => ok())) }
}

// --- the session ----------------------------------------------------------------------------------

/** Copies the harness and points fetch_page at the fetch service (the url is not part of the pin). */
function workingCopy(tmp: string, port: number): string {
  const copy = join(tmp, 'support')
  cpSync(SOURCE, copy, { recursive: true, filter: (src) => !/(audit\.jsonl|__pycache__)$/.test(src) })
  const manifest = join(copy, 'tools', 'fetch_page.yaml')
  const text = readFileSync(manifest, 'utf8')
  writeFileSync(manifest, text.replace(/url: http:\/\/127\.0\.0\.1:\d+\//, `url: http://127.0.0.1:${port}/`))
  return copy
}

/** Changes `tool`'s description in the working copy, leaving its pin as it was. */
function rugPull(copy: string, tool: string, description: string): void {
  const manifest = join(copy, 'tools', `${tool}.yaml`)
  const text = readFileSync(manifest, 'utf8')
  const changed = text.replace(/^( {2}description: ).*$/m, (_m, lead: string) => lead + JSON.stringify(description))
  if (changed === text) throw new Error(`${manifest}: no \`description:\` line to change`)
  writeFileSync(manifest, changed)
}

/** What a fetched page hid from its human readers, when the governor removed something from it. */
function hiddenText(url: JsonValue | undefined, result: CallResult): string | null {
  const redactions = result.output_report?.redactions ?? {}
  if (typeof url !== 'string' || !Object.keys(redactions).some((k) => k.startsWith('injection.'))) return null
  const raw = page(url)?.toString('utf8') ?? ''
  const found = /<div style="display:none">([\s\S]*?)<\/div>/.exec(raw)
  return found ? found[1].trim() : null
}

/** The code tool's worker: HARNESSWEAVER_SANDBOX_WORKER (the Makefile sets it), else the one `make build-sandbox` builds. */
function findSandboxWorker(): void {
  if (process.env.HARNESSWEAVER_SANDBOX_WORKER) return
  const base = join(ROOT, 'target', 'sandbox-worker')
  if (!existsSync(base)) return
  for (const triple of readdirSync(base).sort()) {
    const worker = join(base, triple, 'debug', 'harnessweaver-sandbox')
    if (existsSync(worker)) {
      process.env.HARNESSWEAVER_SANDBOX_WORKER = worker
      return
    }
  }
}

/** The native handlers: the same shop as support_tools.py (data/orders.json). */
function handlers(): { [name: string]: (args: any, ctx: { idempotencyKey: string }) => JsonValue } {
  const orders = JSON.parse(readFileSync(join(SOURCE, 'data', 'orders.json'), 'utf8')) as { [id: string]: Order }
  return {
    lookup_order: ({ order_id }: { order_id: string }) => orders[order_id] ?? { order_id, status: 'unknown' },
    refund_payment: ({ order_id, amount_usd }: { order_id: string; amount_usd: number }, { idempotencyKey }) => ({
      order_id,
      refunded_usd: amount_usd,
      status: 'refunded',
      idempotency_key: idempotencyKey,
    }),
    send_email: ({ to }: { to: string }) => ({ queued: true, to }),
  }
}

type Record = { [key: string]: unknown }

class Session {
  records: Record[] = []
  private pending = new Map<string, { id: string; approver_role: string | null }>()
  harness: Harness
  private run: Run

  constructor(
    private t: Transcript,
    private copy: string,
    private s: Style,
  ) {
    this.harness = load(join(copy, 'harness.yaml'), { tools: handlers() })
    this.run = this.harness.run({ principal: t.agent, tenant: t.tenant ?? null })
  }

  header(n: number, actor: string, say: string): void {
    const who = actor === 'model' ? this.s.cyan('model') : actor === 'finance' ? this.s.yellow('finance') : this.s.red('supply chain')
    console.log(`${this.s.bold(String(n).padStart(2))} ${who}  ${this.s.dim(say)}`)
  }

  show(result: CallResult): void {
    const s = this.s
    const verdict = result.decision === 'allowed' ? s.green('ALLOWED') : result.decision === 'pending' ? s.yellow('PENDING') : s.red('REFUSED')
    const where = result.code ? ` ${s.bold(result.code)} at step ${result.step}` : ''
    const labels = Object.entries(result.labels)
      .filter(([, v]) => v)
      .map(([k]) => k)
      .sort()
    console.log(`   ${verdict}${where}   ${s.dim('run: ' + (labels.join(', ') || 'clean'))}`)
    if (result.approval) console.log(`   ${s.bold('approval')} ${result.approval.id} waits for role \`${result.approval.approver_role}\``)
    if (result.decision === 'allowed') {
      const done = counts(result.output_report)
      if (done) console.log(`   ${s.bold('cleaned')} ${done}`)
    }
    console.log(`   ${s.dim('to model:')} ${excerpt(result.toModel())}`)
  }

  record(n: number, actor: string, result: CallResult, extra: Record): void {
    this.records.push({
      n,
      actor,
      tool: result.tool,
      decision: result.decision,
      code: result.code,
      step: result.step,
      message: result.message,
      approval: result.approval,
      output: result.output,
      output_report: result.output_report,
      labels: result.labels,
      to_model: result.toModel(),
      call_id: result.call_id,
      run_id: result.run_id,
      ...extra,
    })
  }

  async call(n: number, actor: string, tool: string, args: Args): Promise<CallResult> {
    console.log(`   ${this.s.bold('call')} ${tool} ${excerpt(pyJson(args), WIDTH - 20)}`)
    const result = await this.run.call(tool, args, { raiseOnRefusal: false })
    if (result.approval) this.pending.set(tool, result.approval)
    this.show(result)
    const hidden = hiddenText(args.url, result)
    if (hidden) console.log(`   ${this.s.bold('the page hid')} ${excerpt(JSON.stringify(hidden), WIDTH - 20)}`)
    this.record(n, actor, result, { args })
    return result
  }

  async approve(n: number, tool: string): Promise<CallResult> {
    const approval = this.pending.get(tool)
    if (!approval) throw new Error(`no pending approval for \`${tool}\``)
    this.pending.delete(tool)
    const approver = this.t.approver
    console.log(`   ${this.s.bold('approve')} ${approval.id} as ${approver.id} (roles: ${(approver.roles ?? []).join(', ')})`)
    const result = await this.harness.approve(approval.id, { approver, raiseOnRefusal: false })
    this.show(result)
    this.record(n, 'finance', result, { approval_id: approval.id })
    return result
  }

  rugPull(n: number, change: { tool: string; description: string }): void {
    const before = this.harness.tool(change.tool)
    rugPull(this.copy, change.tool, change.description)
    this.harness = load(join(this.copy, 'harness.yaml'), { tools: handlers() })
    this.run = this.harness.run({ principal: this.t.agent, tenant: this.t.tenant ?? null })
    const after = this.harness.tool(change.tool)
    if (!before || !after) throw new Error(`no tool \`${change.tool}\``)
    console.log(`   ${this.s.bold('reload')} tools/${change.tool}.yaml now says: ${excerpt(JSON.stringify(change.description), WIDTH - 30)}`)
    console.log(
      `   pin of ${change.tool}: ${this.s.red(after.pin)} (pinned ${String(after.pinned_digest).slice(0, 19)}…, now ${after.digest.slice(0, 19)}…)`,
    )
    this.records.push({ n, actor: 'supply_chain', tool: change.tool, pin_before: before.pin, pin_after: after.pin, pinned_digest: after.pinned_digest, digest: after.digest })
  }

  async replay(steps: Step[]): Promise<void> {
    let n = 0
    for (const step of steps) {
      n += 1
      this.header(n, step.actor, step.say ?? '')
      if (step.tool) await this.call(n, step.actor, step.tool, step.args ?? {})
      else if (step.approve) await this.approve(n, step.approve)
      else if (step.rug_pull) this.rugPull(n, step.rug_pull)
      console.log()
    }
  }
}

function printTools(harness: Harness, s: Style): void {
  const width = Math.max(...harness.tools.map((t) => t.name.length))
  for (const tool of harness.tools) {
    const extra: string[] = tool.transport === 'code' ? [`sandbox ${tool.sandbox}`] : []
    const dataAccess = tool.data_access as string[]
    const egress = tool.egress as string[]
    const approval = tool.approval as { when: string } | null
    if (dataAccess.length) extra.push('reads ' + dataAccess.join(', '))
    if (egress.length) extra.push('egress ' + egress.join(', '))
    if (approval) extra.push(`approval when ${approval.when}`)
    if ((tool.output as { label: string }).label === 'untrusted') extra.push('output untrusted')
    console.log(
      `   ${tool.name.padEnd(width)}  ${String(tool.transport).padEnd(6)}  risk ${String(tool.risk).padEnd(6)}  ${tool.pin.padEnd(8)}  ${s.dim(extra.join('; '))}`,
    )
  }
}

function printAudit(path: string, s: Style): Record[] {
  const events = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record)
  console.log(s.bold(`audit trail (${events.length} events from the harness's sink, audit.jsonl):`))
  console.log(s.dim(`   ${'#'.padStart(2)}  ${'tool'.padEnd(15)} ${'principal'.padEnd(14)} ${'decision'.padEnd(9)} ${'code'.padEnd(18)} ${'step'.padEnd(9)} approval / redactions`))
  events.forEach((e, i) => {
    let extra = String(e.approval_id ?? '')
    const redactions = e.redactions as { [k: string]: number } | undefined
    if (redactions && Object.keys(redactions).length) {
      const text = Object.keys(redactions)
        .sort()
        .map((k) => `${k} x${redactions[k]}`)
        .join(', ')
      extra = extra ? `${extra} ${text}` : text
    }
    const cell = (v: unknown, w: number): string => String(v ?? '-').padEnd(w)
    console.log(`   ${String(i + 1).padStart(2)}  ${cell(e.tool, 15)} ${cell(e.principal, 14)} ${cell(e.decision, 9)} ${cell(e.code, 18)} ${cell(e.step, 9)} ${extra}`)
  })
  console.log(s.dim('   (each event: tool, principal, tenant, decision, code, step, timings and an args digest; never args or outputs)'))
  return events
}

// --- main -----------------------------------------------------------------------------------------

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name)
  if (i < 0) return undefined
  const value = argv[i + 1]
  if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value`)
  return value
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE)
    return 0
  }
  const known = new Set(['--report', '--color', '--transcript'])
  for (let i = 0; i < argv.length; i += 2) {
    if (!known.has(argv[i])) {
      console.error(`unknown argument \`${argv[i]}\`\n${USAGE}`)
      return 2
    }
  }
  const color = option(argv, '--color') ?? 'auto'
  if (!['auto', 'always', 'never'].includes(color)) {
    console.error(`--color must be auto, always or never, not \`${color}\``)
    return 2
  }
  const reportPath = option(argv, '--report')
  const transcriptPath = option(argv, '--transcript') ?? join(SOURCE, 'transcript.json')
  const s = new Style(color === 'always' || (color === 'auto' && Boolean(process.stdout.isTTY) && !process.env.NO_COLOR))
  const t = JSON.parse(readFileSync(transcriptPath, 'utf8')) as Transcript
  findSandboxWorker()

  const fetches: FetchRecord[] = []
  const web = await startFetchService(fetches)
  const tmp = mkdtempSync(join(tmpdir(), 'hw-demo-'))
  try {
    const copy = workingCopy(tmp, web.port)
    let session: Session
    try {
      session = new Session(t, copy, s)
    } catch (err) {
      if (!(err instanceof LoadError)) throw err
      console.error(`the harness did not load (${err.code}):`)
      for (const p of err.problems) console.error(`  ${p.file}: ${p.path}: ${p.message} [${p.code}]`)
      return 1
    }
    console.log(s.bold(`harnessweaver demo (TypeScript): a shop's support agent, driven by a scripted model (${relative(process.cwd(), transcriptPath)})`))
    console.log(`   harness  ${relative(process.cwd(), SOURCE)} (working copy in ${copy})`)
    console.log(`   web      fetch service on http://127.0.0.1:${web.port}/fetch (loopback only)`)
    const worker = process.env.HARNESSWEAVER_SANDBOX_WORKER
    console.log(`   sandbox  ${worker ? relative(process.cwd(), worker) : 'harnessweaver-sandbox not found: code tools will fail'}`)
    printTools(session.harness, s)
    console.log(`\n${s.bold('ticket')} from the customer:\n${fill(t.ticket)}\n`)
    await session.replay(t.steps)
    console.log(`${s.bold('reply')} to the customer:\n${fill(t.reply)}\n`)
    const audit = printAudit(join(copy, 'audit.jsonl'), s)
    if (reportPath) {
      const report = { language: 'typescript', steps: session.records, audit, fetches, sandbox_worker: process.env.HARNESSWEAVER_SANDBOX_WORKER ?? null }
      writeFileSync(reportPath, JSON.stringify(report, null, 1))
    }
    return 0
  } finally {
    await web.close()
    rmSync(tmp, { recursive: true, force: true })
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
