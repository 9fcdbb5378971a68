/**
 * The Compatibility page: open executions grouped by workflow and start manifest, and the verdict
 * of the manifests on disk (against the lock file's releases and those open executions) — the
 * findings `akter check --database-url` prints, with the same rule ids, each linked to the open
 * executions it would strand. The verdict comes from a function the studio is given
 * (`StudioOptions.compatibility`): `akter studio` passes the check command's own, so the mounted
 * handler never loads the manifest parser or the code generator.
 */
import type { OpenGroup } from "../runtime/compatibility/openExecutions.js"
import type { CheckReport } from "../runtime/compatibility/report.js"
import { html, queryString } from "./html.js"
import { layout, relative, type PageContext } from "./studioPages.js"

/** What the page shows: a check's report, the open groups it read, and where the manifests are. */
export interface CompatibilityVerdict {
  readonly report: CheckReport
  readonly groups: readonly OpenGroup[]
  /** `manifests/ against 3 locked manifests (manifests/akter.lock.json)`. */
  readonly source: string
}

export const compatibilityPage = (
  context: PageContext,
  verdict: CompatibilityVerdict | undefined,
  nowMs: number,
): string => {
  if (verdict === undefined) {
    return layout(
      context,
      "Compatibility",
      html`<h1>Compatibility</h1>
        <p>
          This studio was not given the manifests to check: <code>akter studio</code> runs in the
          project and checks <code>manifests/</code>; a mounted handler passes
          <code>compatibility</code>.
        </p>`,
    )
  }
  const strandedHref = (owner: string, workflow: string | undefined) =>
    `${context.base}/executions${queryString({ ownerType: owner, workflow, status: "open" })}`
  const findings = verdict.report.findings
  const errors = findings.filter(
    (finding) => finding.severity === "error" && finding.ignored === undefined,
  )
  const content = html`<h1>Compatibility</h1>
    <p class="muted">${verdict.source}</p>
    <p
      class="notice ${errors.length > 0 ? "error" : ""}"
      data-verdict="${errors.length > 0 ? "breaking" : "compatible"}"
    >
      ${
        errors.length > 0
          ? `Breaking: ${errors.length} finding${errors.length === 1 ? "" : "s"} would strand executions or releases (akter check exits 1).`
          : "Compatible: the manifests on disk can replay every released manifest and every open execution."
      }
    </p>
    <h2>Findings</h2>
    ${
      findings.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<table class="findings">
            <thead>
              <tr>
                <th>severity</th>
                <th>rule</th>
                <th>where</th>
                <th>finding</th>
                <th class="num">open</th>
              </tr>
            </thead>
            <tbody>
              ${findings.map(
                (finding) =>
                  html`<tr data-rule="${finding.rule}">
                    <td>
                      <span class="status ${finding.severity === "error" ? "failed" : "suspended"}"
                        >${finding.severity}${finding.ignored === undefined ? "" : " (ignored)"}</span
                      >
                    </td>
                    <td class="mono">${finding.rule}</td>
                    <td class="mono">
                      ${finding.location === undefined ? "" : `${finding.location.file}:${finding.location.line}:${finding.location.column}`}
                    </td>
                    <td>
                      ${finding.message}
                      <div class="muted">fix: ${finding.fix}</div>
                      ${finding.ignored === undefined ? "" : html`<div class="muted">ignored: ${finding.ignored.reason}</div>`}
                    </td>
                    <td class="num">
                      ${
                        finding.open === undefined || finding.open.count === 0
                          ? html`<span class="muted">0</span>`
                          : html`<a
                              href="${strandedHref(finding.owner, finding.workflow)}"
                              title="oldest started ${relative(finding.open.oldestStartedAtMs, nowMs)}"
                              >${finding.open.count}</a
                            >`
                      }
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <h2>Open executions by start manifest</h2>
    ${
      verdict.groups.length === 0
        ? html`<p class="muted">No open execution.</p>`
        : html`<table class="groups">
            <thead>
              <tr>
                <th>workflow</th>
                <th>start manifest</th>
                <th class="num">open</th>
                <th>oldest</th>
                <th>findings</th>
              </tr>
            </thead>
            <tbody>
              ${verdict.groups.map((group) => {
                const concerning = findings.filter(
                  (finding) =>
                    finding.owner === group.owner &&
                    finding.workflow === group.workflow &&
                    finding.open !== undefined,
                )
                return html`<tr>
                  <td>${group.owner}.${group.workflow}</td>
                  <td class="mono">${group.startManifestHash}</td>
                  <td class="num">
                    <a href="${strandedHref(group.owner, group.workflow)}">${group.count}</a>
                  </td>
                  <td>${relative(group.oldestStartedAtMs, nowMs)}</td>
                  <td>
                    ${concerning.length === 0 ? html`<span class="status succeeded">replayable</span>` : concerning.map((finding) => html`<code>${finding.rule}</code> `)}
                  </td>
                </tr>`
              })}
            </tbody>
          </table>`
    }`
  return layout(context, "Compatibility", content)
}
