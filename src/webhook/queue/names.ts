// Names the instances sharing a NATS server agree on: subjects, streams, buckets and keys.

/** A hook or job id as a subject token, stream name or key part: [A-Za-z0-9-] kept, every other byte as _XX. */
export function token(id: string): string {
  if (/^[A-Za-z0-9-]+$/.test(id)) return id;
  let out = "";
  for (const b of Buffer.from(id, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9-]/.test(c) ? c : "_" + b.toString(16).padStart(2, "0");
  }
  return out === "" ? "_" : out;
}

export const streamName = (hook: string): string => `WEBHOOK_${token(hook)}`;
export const jobSubject = (hook: string): string => `webhook.jobs.${token(hook)}`;

/** Key-value bucket holding the first job id of each delivery id (deduplicate). */
export const DELIVERIES_BUCKET = "webhook_deliveries";
/** Key-value bucket holding every job's record, key the job id (unique over all hooks, as in one process). */
export const JOBS_BUCKET = "webhook_jobs";
/** Key-value bucket holding how the instance started last signs its jobs, key `signing` (-queue-key-file). */
export const QUEUE_BUCKET = "webhook_queue";
/** Key-value bucket holding each hook's rate-limit window, key `<hook>`. */
export const RATES_BUCKET = "webhook_rates";

export const jobKey = (id: string): string => token(id);
/** The subject a bucket's value under `key` is stored on (its every change is published there); its signature covers it. */
export const kvSubject = (bucket: string, key: string): string => `$KV.${bucket}.${key}`;
export const jobKeySubject = (key: string): string => kvSubject(JOBS_BUCKET, key);
export const jobRecordSubject = (id: string): string => jobKeySubject(jobKey(id));
