// The reference's documented examples (adnanh/webhook docs/Hook-Examples.md), each doing what the
// doc shows. The hooks are the doc's, with three changes only: ids made unique (they share one
// server), the command replaced by a fixture that records what it received, and
// command-working-directory pointed at a temp folder.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, parseDump, parseEcho, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { curl } from "../fixtures/http.js";

const record = fixture("record.sh");
const NOT_SATISFIED = "Hook rules were not satisfied.";
let dir = "";
let s: Server;
const cwds: Record<string, string> = {};

/** The record.sh output of the hook whose working directory is cwds[id], once it exists. */
async function recorded(id: string) {
  const file = join(cwds[id]!, "record.txt");
  await eventually(() => existsSync(file), 10_000);
  return parseEcho(await readFile(file, "utf8"));
}

const PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAGXRFWHRTb2Z0d2FyZQBBZG9iZSBJbWFnZVJlYWR5ccllPAAAAmJJREFUeNqkk89rE1EQx2d/NNq0xcYYayPYJDWC9ODBsKIgAREjBmvEg2cvHnr05KHQ9iB49SL+/BMEfxBQKHgwCEbTNNIYaqgaoanFJi+rcXezye4689jYkIMIDnx47837zrx583YFx3Hgf0xA6/dJyAkkgUy4vgryAnmNWH9L4EVmotFoKplMHgoGg6PkrFarjXQ6/bFcLj/G5W1E+3NaX4KZeDx+dX5+7kg4HBlmrC6JoiDFYrGhROLM/mp1Y6JSqdCd3/SW0GUqEAjkl5ZyHTSHKBQKnO6a9khD2m5cr91IJBJ1VVWdiM/n6LruNJtNDs3JR3ukIW03SHTHi8iVsbG9I51OG1bW16HVasHQZopDc/JZVgdIQ1o3BmTkEnJXURS/KIpgGAYPkCQJPi0u8uzDKQN0XQPbtgE1MmrHs9nsfSqAEjxCNtHxZHLy4G4smUQgyzL4LzOegDGGp1ucVqsNqKVrpJCM7F4hg6iaZvhqtZrg8XjA4xnAU3XeKLqWaRImoIZeQXVjQO5pYp4xNVirsR1erxer2O4yfa227WCwhtWoJmn7m0h270NxmemFW4706zMm8GCgxBGEASCfhnukIW03iFdQnOPz0LNKp3362JqQzSw4u2LXBe+Bs3xD+/oc1NxN55RiC9fOme0LEQiRf2rBzaKEeJJ37ZWTVunBeGN2WmQjg/DeLTVP89nzAive2dMwlo9bpFVC2xWMZr+A720FVn88fAUb3wDMOjyN7YNc6TvUSHQ4AH6TOUdLL7em68UtWPsJqxgTpgeiLu1EBt1R+Me/mF7CQPTfAgwAGxY2vOTrR3oAAAAASUVORK5CYII=";

before(async () => {
  dir = await tempDir("webhook-examples-");
  const ids = ["github", "bitbucket", "bitbucket-local", "gitlab", "gogs", "gitea", "slack", "test-file-webhook", "scalr", "travis", "xml", "plex"];
  for (const id of ids) {
    cwds[id] = join(dir, id);
    await mkdir(cwds[id]!);
  }
  const payloadArg = (name: string) => ({ source: "payload", name });
  const githubLike = (id: string, match: unknown) => ({
    id,
    "execute-command": record,
    "command-working-directory": cwds[id],
    "pass-arguments-to-command": [payloadArg("head_commit.id"), payloadArg("pusher.name"), payloadArg("pusher.email")],
    "trigger-rule": {
      and: [match, { match: { type: "value", value: "refs/heads/master", parameter: { source: "payload", name: "ref" } } }],
    },
  });
  const bitbucket = (id: string, range: string) => ({
    id,
    "execute-command": record,
    "command-working-directory": cwds[id],
    "pass-arguments-to-command": [payloadArg("actor.username")],
    "trigger-rule": { match: { type: "ip-whitelist", "ip-range": range } },
  });
  const hooksFile = await writeHooks(dir, [
    githubLike("github", { match: { type: "payload-hash-sha1", secret: "mysecret", parameter: { source: "header", name: "X-Hub-Signature" } } }),
    bitbucket("bitbucket", "104.192.143.0/24"),
    bitbucket("bitbucket-local", "127.0.0.0/8"),
    {
      id: "gitlab",
      "execute-command": record,
      "command-working-directory": cwds["gitlab"],
      "pass-arguments-to-command": [payloadArg("user_name")],
      "response-message": "Executing redeploy script",
      "trigger-rule": { match: { type: "value", value: "<YOUR-GENERATED-TOKEN>", parameter: { source: "header", name: "X-Gitlab-Token" } } },
    },
    githubLike("gogs", { match: { type: "payload-hash-sha256", secret: "mysecret", parameter: { source: "header", name: "X-Gogs-Signature" } } }),
    githubLike("gitea", { match: { type: "value", value: "mysecret", parameter: { source: "payload", name: "secret" } } }),
    {
      id: "slack",
      "execute-command": record,
      "command-working-directory": cwds["slack"],
      "response-message": "Executing redeploy script",
      "trigger-rule": { match: { type: "value", value: "<YOUR-GENERATED-TOKEN>", parameter: { source: "payload", name: "token" } } },
    },
    {
      id: "simple-one",
      "execute-command": record,
      "response-message": "Executing simple webhook...",
      "trigger-rule": { match: { type: "value", value: "42", parameter: { source: "url", name: "token" } } },
    },
    {
      id: "test-file-webhook",
      "execute-command": "/bin/ls",
      "command-working-directory": cwds["test-file-webhook"],
      "pass-file-to-command": [{ source: "payload", name: "binary", envname: "ENV_VARIABLE", base64decode: true }],
      "include-command-output-in-response": true,
    },
    {
      id: "scalr",
      "execute-command": fixture("dump.mjs"),
      "command-working-directory": cwds["scalr"],
      "include-command-output-in-response": true,
      "trigger-rule": { match: { type: "scalr-signature", secret: "Scalr-provided signing key" } },
      "pass-environment-to-command": [
        { envname: "EVENT_NAME", source: "payload", name: "eventName" },
        { envname: "SERVER_HOSTNAME", source: "payload", name: "data.SCALR_SERVER_HOSTNAME" },
      ],
    },
    {
      id: "travis",
      "execute-command": record,
      "command-working-directory": cwds["travis"],
      "parse-parameters-as-json": [{ source: "payload", name: "payload" }],
      "trigger-rule": {
        and: [
          { match: { type: "value", value: "passed", parameter: { name: "payload.state", source: "payload" } } },
          { match: { type: "value", value: "master", parameter: { name: "payload.branch", source: "payload" } } },
        ],
      },
    },
    {
      id: "plex",
      "execute-command": record,
      "command-working-directory": cwds["plex"],
      "parse-parameters-as-json": [{ source: "payload", name: "payload" }],
      "trigger-rule": { match: { type: "value", parameter: { source: "payload", name: "payload.event" }, value: "media.play" } },
    },
  ]);
  // The XML example's hooks text as the doc prints it, trailing commas included.
  const xmlHooks = join(dir, "xml-hooks.json");
  await writeFile(
    xmlHooks,
    `[
  {
    "id": "xml",
    "execute-command": "${record}",
    "command-working-directory": "${cwds["xml"]}",
    "trigger-rule": {
      "and": [
        {
          "match": {
            "type": "value",
            "parameter": {
              "source": "payload",
              "name": "app.users.user.0.-name"
            },
            "value": "Jeff"
          }
        },
        {
          "match": {
            "type": "value",
            "parameter": {
              "source": "payload",
              "name": "app.messages.message.#text"
            },
            "value": "Hello!!"
          }
        },
      ],
    }
  }
]
`,
  );
  s = await startServer(["-hooks", hooksFile, "-hooks", xmlHooks], { cwd: dir });
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

const githubPush = (ref: string) =>
  JSON.stringify({
    ref,
    head_commit: { id: "1481a2de7b2a7d02428ad93446ab166be7793fbb", timestamp: "2013-03-12T08:14:29-07:00" },
    pusher: { name: "Garen Torikian", email: "lolwut@noway.biz" },
    repository: { name: "testing" },
  });

describe("docs/Hook-Examples.md", { concurrency: true }, () => {
  test("GitHub: a push signed with X-Hub-Signature (sha1=…) to master runs the command with commit id, pusher name and email", async () => {
    const body = githubPush("refs/heads/master");
    const file = join(dir, "github-push.json");
    await writeFile(file, body);
    const sig = "sha1=" + createHmac("sha1", "mysecret").update(body).digest("hex");
    const r = await curl([
      "-H",
      "Content-Type: application/json",
      "-H",
      `X-Hub-Signature: ${sig}`,
      "-H",
      "X-GitHub-Event: push",
      "--data-binary",
      `@${file}`,
      `${s.base}/hooks/github`,
    ]);
    assert.equal(r.status, 200);
    assert.equal(r.body, "");
    const got = await recorded("github");
    assert.deepEqual(got.args, ["1481a2de7b2a7d02428ad93446ab166be7793fbb", "Garen Torikian", "lolwut@noway.biz"]);
    assert.equal(got.cwd, cwds["github"]);
  });

  test("GitHub: a correctly signed push to another branch does not run", async () => {
    const body = githubPush("refs/heads/dev");
    const sig = "sha1=" + createHmac("sha1", "mysecret").update(body).digest("hex");
    const r = await send(`${s.base}/hooks/github`, { headers: { "Content-Type": "application/json", "X-Hub-Signature": sig }, body });
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("GitHub: a forged signature is refused", async () => {
    const body = githubPush("refs/heads/master");
    const sig = "sha1=" + createHmac("sha1", "guess").update(body).digest("hex");
    const r = await send(`${s.base}/hooks/github`, { headers: { "Content-Type": "application/json", "X-Hub-Signature": sig }, body });
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while evaluating hook rules.");
  });

  test("Bitbucket: a request from outside 104.192.143.0/24 (here: localhost) does not run", async () => {
    const r = await send(`${s.base}/hooks/bitbucket`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ actor: { username: "marcus" } }),
    });
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(existsSync(join(cwds["bitbucket"]!, "record.txt")), false);
  });

  test("Bitbucket: the same hook with the client's range passes actor.username", async () => {
    const r = await send(`${s.base}/hooks/bitbucket-local`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ actor: { username: "marcus" } }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual((await recorded("bitbucket-local")).args, ["marcus"]);
  });

  test("GitLab: the X-Gitlab-Token header, the response message, and user_name passed on", async () => {
    const body = JSON.stringify({ object_kind: "push", ref: "refs/heads/master", user_name: "John Smith" });
    const bad = await send(`${s.base}/hooks/gitlab`, { headers: { "Content-Type": "application/json", "X-Gitlab-Token": "wrong" }, body });
    assert.equal(bad.text, NOT_SATISFIED);
    const r = await send(`${s.base}/hooks/gitlab`, {
      headers: { "Content-Type": "application/json", "X-Gitlab-Token": "<YOUR-GENERATED-TOKEN>", "X-Gitlab-Event": "Push Hook" },
      body,
    });
    assert.equal(r.status, 200);
    assert.equal(r.text, "Executing redeploy script");
    assert.deepEqual((await recorded("gitlab")).args, ["John Smith"]);
  });

  test("Gogs: X-Gogs-Signature (bare sha256 hex) and ref", async () => {
    const body = githubPush("refs/heads/master");
    const sig = createHmac("sha256", "mysecret").update(body).digest("hex");
    const r = await send(`${s.base}/hooks/gogs`, { headers: { "Content-Type": "application/json", "X-Gogs-Signature": sig }, body });
    assert.equal(r.status, 200);
    assert.deepEqual((await recorded("gogs")).args, ["1481a2de7b2a7d02428ad93446ab166be7793fbb", "Garen Torikian", "lolwut@noway.biz"]);
  });

  test("Gitea: the secret in the payload and the ref", async () => {
    const push = JSON.parse(githubPush("refs/heads/master")) as Record<string, unknown>;
    const wrong = await send(`${s.base}/hooks/gitea`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ...push, secret: "not it" }),
    });
    assert.equal(wrong.text, NOT_SATISFIED);
    const r = await send(`${s.base}/hooks/gitea`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ...push, secret: "mysecret" }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual((await recorded("gitea")).args, ["1481a2de7b2a7d02428ad93446ab166be7793fbb", "Garen Torikian", "lolwut@noway.biz"]);
  });

  test("Slack slash command: a url-encoded form with the token gets 'Executing redeploy script'", async () => {
    const form = ["token=<YOUR-GENERATED-TOKEN>", "team_id=T0001", "command=/redeploy", "text=now please"];
    const r = await curl([...form.flatMap((f) => ["--data-urlencode", f]), `${s.base}/hooks/slack`]);
    assert.equal(r.status, 200);
    assert.equal(r.body, "Executing redeploy script");
    await recorded("slack");
    const bad = await curl(["--data-urlencode", "token=nope", `${s.base}/hooks/slack`]);
    assert.equal(bad.body, NOT_SATISFIED);
  });

  test("A simple webhook with a secret key in GET query: without the token it won't work, with ?token=42 it will", async () => {
    const without = await send(`${s.base}/hooks/simple-one`, { method: "GET" });
    assert.equal(without.text, NOT_SATISFIED);
    const withToken = await curl([`${s.base}/hooks/simple-one?token=42`]);
    assert.equal(withToken.status, 200);
    assert.equal(withToken.body, "Executing simple webhook...");
  });

  test("Pass file-to-command: curl -d @testRequest.json; /bin/ls in the working directory sees the decoded file, which is gone afterwards", async () => {
    const req = join(dir, "testRequest.json");
    await writeFile(req, JSON.stringify({ binary: PNG_BASE64 }));
    const r = await curl(["-H", "Content-Type:application/json", "-X", "POST", "-d", `@${req}`, `${s.base}/hooks/test-file-webhook`]);
    assert.equal(r.status, 200);
    assert.match(r.body, /^ENV_VARIABLE\S*$/m);
    await eventually(async () => (await readdir(cwds["test-file-webhook"]!)).length === 0, 5_000);
  });

  test("Scalr: a signed event passes EVENT_NAME and SERVER_HOSTNAME to the command", async () => {
    const body = JSON.stringify({ eventName: "HostUp", data: { SCALR_SERVER_HOSTNAME: "web-01" } });
    const d = new Date();
    const pad = (n: number) => String(n).padStart(2, "0");
    const date =
      `${["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][d.getUTCDay()]} ${pad(d.getUTCDate())} ` +
      `${["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][d.getUTCMonth()]} ` +
      `${d.getUTCFullYear()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
    const sig = createHmac("sha1", "Scalr-provided signing key").update(body).update(date).digest("hex");
    const r = await send(`${s.base}/hooks/scalr`, { headers: { "Content-Type": "application/json", "X-Signature": sig, Date: date }, body });
    assert.equal(r.status, 200);
    const { env } = parseDump(r.text);
    assert.equal(env["EVENT_NAME"], "HostUp");
    assert.equal(env["SERVER_HOSTNAME"], "web-01");
  });

  test("Travis CI: payload=<JSON_STRING> is parsed; a passed master build runs, a failed one does not", async () => {
    const form = (state: string) => "payload=" + encodeURIComponent(JSON.stringify({ state, branch: "master", number: "42" }));
    const failed = await send(`${s.base}/hooks/travis`, { headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: form("failed") });
    assert.equal(failed.text, NOT_SATISFIED);
    const passed = await send(`${s.base}/hooks/travis`, { headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: form("passed") });
    assert.equal(passed.status, 200);
    assert.equal(passed.text, "");
    await recorded("travis");
  });

  test("XML payload: app.users.user.0.-name is Jeff and app.messages.message.#text is Hello!!", async () => {
    const xml = `<app>
  <users>
    <user id="1" name="Jeff" />
    <user id="2" name="Sally" />
  </users>
  <messages>
    <message id="1" from_user="1" to_user="2">Hello!!</message>
  </messages>
</app>`;
    const no = await send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "application/xml" }, body: xml.replace("Hello!!", "Bye") });
    assert.equal(no.text, NOT_SATISFIED);
    const r = await send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "application/xml" }, body: xml });
    assert.equal(r.status, 200);
    assert.equal(r.text, "");
    await recorded("xml");
  });

  test("Multipart form data (Plex): the payload part is parsed as JSON, the thumb part is ignored", async () => {
    const thumb = join(dir, "thumb.jpg");
    await writeFile(thumb, Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46]));
    const pause = await curl(["-F", 'payload={"event":"media.pause","user":true}', "-F", `thumb=@${thumb};type=image/jpeg`, `${s.base}/hooks/plex`]);
    assert.equal(pause.body, NOT_SATISFIED);
    const play = await curl(["-F", 'payload={"event":"media.play","user":true}', "-F", `thumb=@${thumb};type=image/jpeg`, `${s.base}/hooks/plex`]);
    assert.equal(play.status, 200);
    assert.equal(play.body, "");
    await recorded("plex");
  });
});
