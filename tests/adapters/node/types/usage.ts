// Type-checked (never run) by tests/adapters/node/package.test.mjs: the documented
// uses of harnessweaver/ai-sdk and harnessweaver/openai-agents must compile
// against their .d.ts and the frameworks' own types under `strict`.
import { generateText, stepCountIs, type LanguageModel, type ModelMessage, type ToolApprovalResponse } from 'ai'
import { Agent, run as runAgent, type FunctionTool } from '@openai/agents'
import { load, type JsonValue } from '../../../../bindings-node/index.js'
import * as hwai from '../../../../bindings-node/adapters/ai-sdk.js'
import * as hwa from '../../../../bindings-node/adapters/openai-agents.js'

const h = load('tests/adapters/node/harness/harness.yaml', { tools: { lookup_order: () => ({}), refund: () => ({}) } })
const user = { id: 'alice', roles: ['support'] }
const finance = { id: 'fran', roles: ['finance'] }

async function aiSdk(model: LanguageModel): Promise<string> {
  const tools = hwai.tools(h, h.run({ principal: user }), { names: ['refund'] })
  const messages: ModelMessage[] = [{ role: 'user', content: 'refund order A-1001' }]
  let result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) })
  messages.push(...result.response.messages)
  const requests = result.content.filter((p) => p.type === 'tool-approval-request')
  if (requests.length > 0) {
    const yes: ToolApprovalResponse[] = requests.map((r) => hwai.approve(tools, r, { approver: finance }))
    const no: ToolApprovalResponse = await hwai.reject(tools, requests[0]!, { by: finance, reason: 'no' })
    messages.push({ role: 'tool', content: [...yes, no] })
    result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) })
  }
  const outputs: unknown[] = result.toolResults.map((r) => r.output)
  const out: JsonValue | undefined = await tools.refund?.execute?.({ order_id: 'A-1001', amount_usd: 5 }, { toolCallId: 'x', messages: [] }) as JsonValue
  void [outputs, out]
  return result.text
}

async function agents(): Promise<unknown> {
  const hrun = h.run({ principal: user })
  const list: FunctionTool<any, any, unknown>[] = hwa.tools(h, hrun)
  const agent = new Agent({ name: 'support', instructions: 'help', tools: list })
  let result = await runAgent(agent, 'refund order A-1001')
  while (result.interruptions.length > 0) {
    for (const item of result.interruptions) {
      if (item.name === 'refund') hwa.approve(result.state, item, { approver: finance })
      else await hwa.reject(result.state, item, { by: finance, reason: 'no' })
    }
    result = await runAgent(agent, result.state)
  }
  return result.finalOutput
}

// @ts-expect-error: the second argument is a run, not a principal
hwai.tools(h, user)
// @ts-expect-error: approving needs an approver
hwa.approve(undefined as never, undefined as never, {})
void [aiSdk, agents]

// The adapters' declared types are the frameworks' own, not `any` (which
// skipLibCheck, needed for the frameworks' own .d.ts, would let through).
const hrun = h.run({ principal: user })
// @ts-expect-error: a tool set, not a number
const notNumber: number = hwai.tools(h, hrun)
// @ts-expect-error: FunctionTools, not strings
const notStrings: string[] = hwa.tools(h, hrun)
// @ts-expect-error: an approval response, not a string
const notText: string = hwai.approve({}, { approvalId: 'a', toolCall: { toolCallId: 'c', toolName: 't', input: {} } }, { approver: finance })
// @ts-expect-error: the SDK's RunState, not any object
hwa.approve({}, undefined as never, { approver: finance })
// @ts-expect-error: the SDK's RunToolApprovalItem, not any object
hwa.approve(undefined as never, {}, { approver: finance })
void [notNumber, notStrings, notText]
