/**
 * Who started an execution. It is recorded at start; resumes and activities act on its behalf on
 * any runner, and ids of another tenant are refused.
 */
export interface Caller {
  readonly tenant: string
  readonly subject?: string | undefined
}

export const DEFAULT_TENANT = "default"

export const defaultCaller: Caller = { tenant: DEFAULT_TENANT }
