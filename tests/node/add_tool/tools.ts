// A shop's tools as a TypeScript developer would write them: exported
// functions taking one typed arguments object. tests/node/add_tool.test.mjs
// turns each into a manifest with `npx harnessweaver add tool ./tools.ts#name`
// and calls them governed.

export enum OrderStatus {
  Pending = 'pending',
  Shipped = 'shipped',
  Cancelled = 'cancelled',
}

export enum Priority {
  Low = 1,
  Normal = 2,
  Urgent = 3,
}

export interface Address {
  street: string
  city: string
  /** ISO 3166 country code. */
  country: 'DE' | 'FR' | 'GB' | 'US'
  unit?: string
}

export interface LineItem {
  sku: string
  quantity: number
  giftWrap?: boolean
}

type Currency = 'USD' | 'EUR'

/** Look up an order by its id. */
export function lookupOrder(args: {
  /** The order's id, like `A-1001`. */
  orderId: string
}): { orderId: string; status: string } {
  return { orderId: args.orderId, status: 'shipped' }
}

/**
 * Search the catalogue.
 *
 * Matches the query against names and descriptions.
 */
export function searchProducts({ query, limit = 10, maxPrice = null, inStockOnly = false, tags }: {
  /** Words to look for. */
  query: string
  /** At most this many results. */
  limit?: number
  maxPrice?: number | null
  inStockOnly?: boolean
  tags?: string[]
}) {
  return Array.from({ length: Math.min(limit, 3) }, (_, i) => ({ name: `${query} #${i}`, maxPrice, inStockOnly, tags: tags ?? [] }))
}

/** Move an order to a new status. */
export function setOrderStatus(args: { orderId: string; status: OrderStatus; note?: 'customer' | 'internal'; priority?: Priority }) {
  return { ...args }
}

/** Ship some of an order's items to an address. */
export async function createShipment(args: { orderId: string; address: Address; items: LineItem[]; options?: Record<string, boolean> }) {
  return { orderId: args.orderId, city: args.address.city, units: args.items.reduce((n, i) => n + i.quantity, 0) }
}

/** Refund part or all of an order's payment. */
export const refundPayment = (args: { orderId: string; amountUsd: number; reason: 'damaged' | 'late' | 'other'; memo?: string | null }) =>
  ({ orderId: args.orderId, refundedUsd: args.amountUsd, reason: args.reason })

/** Set new prices for many SKUs at once. */
export function bulkUpdatePrices({ updates, currency = 'USD', dryRun = true }: { updates: Record<string, number>; currency?: Currency; dryRun?: boolean }) {
  return { changed: dryRun ? 0 : Object.keys(updates).length, currency }
}

/** Quote shipping for a parcel. */
export function quoteShipping(args: {
  dimsCm: [number, number, number]
  destination: { country: string; postcode: string }
  services?: Array<'standard' | 'express' | 'overnight'>
  insured?: boolean | null
}) {
  return { volumeL: args.dimsCm.reduce((a, b) => a * b, 1) / 1000, to: args.destination.country }
}

/** Not describable: a Date is not a JSON value. */
export function exportReport(args: { since: Date }) {
  return args.since.toISOString()
}

/** Not describable as is: a handler receives one arguments object. */
export function lookupById(orderId: string) {
  return orderId
}
