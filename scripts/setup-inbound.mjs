// The inbound part of `npm run setup:cloudflare` (scripts/setup-cloudflare.mjs; docs/deploy.md
// "Receiving mail"): Email Routing for INBOUND_DOMAIN, sending its mail to this Worker.
// Through the Cloudflare REST API, with CLOUDFLARE_API_TOKEN (Zone Read, Zone Settings Edit, Email
// Routing Rules Edit): `wrangler login`'s OAuth token cannot manage Email Routing, and wrangler
// refuses a catch-all rule to a Worker. Without a token, or where the token is refused, it prints
// the step to do by hand and goes on: receiving is optional, nothing here fails the setup.
//   - finds the zone of INBOUND_DOMAIN (the domain itself or a parent zone in the account),
//   - turns Email Routing on for the domain (POST /zones/{zone}/email/routing/dns {name}), which
//     writes its MX, SPF and DKIM records,
//   - turns subaddressing on (r+<token>@ and <name>+<project>@ then match the r@ and <name>@ rules),
//   - makes the rule r@<domain> (replies: r+<token>@) "Send to a Worker" <worker> (u@ is reserved for
//     unsubscribe mail, which the Worker does not receive yet),
//   - with `--inbound-catch-all`, the zone's catch-all rule too (every other address of the zone goes
//     to the Worker, which rejects what it does not know: only for a zone that receives nothing else).
// `--dry-run`: reads only, and prints what it would change. A second run changes nothing.

const API = "https://api.cloudflare.com/client/v4";

/** The literal addresses the Worker must receive: replies (r+<token>@). */
export const inboundAddresses = (domain) => [`r@${domain}`];

const isWorkerRule = (rule, worker) => rule?.actions?.some((a) => a.type === "worker" && (a.value ?? []).includes(worker));

/**
 * Sets up Email Routing for `domain` to `worker`. `token` may be undefined (then only the manual
 * steps are printed). `fetchImpl`, `apiBase` and `log` are for tests. Returns what it did, by step.
 */
export async function setupInbound({
  domain,
  worker,
  token,
  accountId,
  catchAll = false,
  dryRun = false,
  apiBase = API,
  fetchImpl = fetch,
  log = console.log,
}) {
  const done = [];
  const manual = (what) => {
    done.push({ step: what, manual: true });
    log(`! inbound: ${what} by hand (docs/deploy.md#receiving-mail)`);
  };
  if (!domain) {
    log("· inbound: INBOUND_DOMAIN is not set in [vars]: receiving mail is off (docs/deploy.md#receiving-mail)");
    return done;
  }
  const addresses = inboundAddresses(domain);
  if (!token) {
    log(`· inbound: ${domain}: no CLOUDFLARE_API_TOKEN, so Email Routing is not set up from here`);
    manual(`turn Email Routing on for ${domain}`);
    manual("turn subaddressing on (Email Routing > Settings)");
    for (const address of addresses) manual(`add the rule ${address} > Send to a Worker > ${worker}`);
    return done;
  }

  async function api(method, path, body) {
    const response = await fetchImpl(`${apiBase}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let json;
    try {
      json = await response.json();
    } catch {
      json = {};
    }
    const errors = (json.errors ?? []).map((e) => `${e.code ?? ""} ${e.message ?? ""}`.trim()).join("; ");
    return { ok: response.ok && json.success !== false, status: response.status, result: json.result, errors: errors || `HTTP ${response.status}` };
  }
  const write = async (method, path, body, what) => {
    if (dryRun) {
      log(`~ inbound: would ${what} (--dry-run)`);
      done.push({ step: what, dryRun: true });
      return { ok: true };
    }
    const answer = await api(method, path, body);
    if (answer.ok) {
      log(`+ inbound: ${what}`);
      done.push({ step: what });
    } else {
      log(`! inbound: could not ${what}: ${answer.errors}`);
      manual(what);
    }
    return answer;
  };

  // The zone: the domain itself or its nearest parent in the account.
  let zone;
  const labels = domain.split(".");
  for (let i = 0; i <= labels.length - 2 && !zone; i++) {
    const query = new URLSearchParams({ name: labels.slice(i).join(".") });
    if (accountId) query.set("account.id", accountId);
    const found = await api("GET", `/zones?${query}`);
    if (!found.ok) {
      log(`! inbound: cannot list zones with this token: ${found.errors}`);
      manual(`set up Email Routing for ${domain}`);
      return done;
    }
    zone = found.result?.[0];
  }
  if (!zone) {
    log(`! inbound: no zone of ${domain} in this account: Email Routing needs the domain's DNS on Cloudflare`);
    return done;
  }
  log(`✓ inbound: ${domain} is in the zone ${zone.name}`);

  const settings = await api("GET", `/zones/${zone.id}/email/routing`);
  if (!settings.ok) {
    log(`! inbound: cannot read Email Routing settings: ${settings.errors}`);
    manual(`set up Email Routing for ${domain}`);
    return done;
  }
  // A subdomain's own routing cannot be read back here; enabling it again is harmless.
  if (settings.result?.enabled && zone.name === domain) log(`✓ inbound: Email Routing is on for ${domain}`);
  else await write("POST", `/zones/${zone.id}/email/routing/dns`, { name: domain }, `turn Email Routing on for ${domain} (its MX, SPF and DKIM records)`);
  if (settings.result?.support_subaddress) log("✓ inbound: subaddressing is on");
  else await write("PATCH", `/zones/${zone.id}/email/routing`, { support_subaddress: true }, "turn subaddressing on");

  const rules = await api("GET", `/zones/${zone.id}/email/routing/rules?per_page=50`);
  if (!rules.ok) {
    log(`! inbound: cannot list Email Routing rules: ${rules.errors}`);
    for (const address of addresses) manual(`add the rule ${address} > Send to a Worker > ${worker}`);
    return done;
  }
  for (const address of addresses) {
    const rule = (rules.result ?? []).find((r) => r.matchers?.some((m) => m.type === "literal" && m.field === "to" && m.value?.toLowerCase() === address));
    if (rule && isWorkerRule(rule, worker)) log(`✓ inbound: rule ${address} > Worker ${worker}`);
    else if (rule) log(`! inbound: a rule for ${address} exists with another action: left as it is (change it to Send to a Worker > ${worker})`);
    else {
      await write(
        "POST",
        `/zones/${zone.id}/email/routing/rules`,
        {
          name: `${worker}: ${address}`,
          enabled: true,
          matchers: [{ type: "literal", field: "to", value: address }],
          actions: [{ type: "worker", value: [worker] }],
        },
        `add the rule ${address} > Send to a Worker > ${worker}`,
      );
    }
  }

  if (catchAll) {
    const current = await api("GET", `/zones/${zone.id}/email/routing/rules/catch_all`);
    if (current.ok && current.result?.enabled && isWorkerRule(current.result, worker)) log(`✓ inbound: catch-all of ${zone.name} > Worker ${worker}`);
    else {
      await write(
        "PUT",
        `/zones/${zone.id}/email/routing/rules/catch_all`,
        { name: `${worker}: catch-all`, enabled: true, matchers: [{ type: "all" }], actions: [{ type: "worker", value: [worker] }] },
        `make the catch-all of ${zone.name} Send to a Worker > ${worker}`,
      );
    }
  } else {
    log(`· inbound: named addresses (<name>+<project>@${domain}) need a rule <name>@${domain} > Worker each, or the catch-all (--inbound-catch-all)`);
  }
  return done;
}
