/**
 * A handle's metrics in the Prometheus text exposition format, rendered by Effect's own formatter
 * from the handle's metric registry (loaded on the first scrape, never by a process that is not
 * scraped). Serve it at `/metrics` from the application's HTTP server; `akter run --metrics-port`
 * serves it on its own.
 */
import { internalsOf, type Akter } from "../akter.js"

/**
 * The Prometheus text of `akter`'s metrics: executions started and finished, activity attempt
 * durations, timer lag, leases, runners and live passes (see the README's Observability section).
 *
 * @example
 * createServer(async (request, response) => {
 *   if (request.url !== "/metrics") return void response.writeHead(404).end()
 *   response.writeHead(200, { "content-type": "text/plain; version=0.0.4" })
 *   response.end(await prometheusMetrics(akter))
 * }).listen(9464)
 */
export const prometheusMetrics = async (akter: Akter): Promise<string> => {
  const { formatUnsafe } = await import("effect/observability/PrometheusMetrics")
  return formatUnsafe(internalsOf(akter).metrics.context)
}
