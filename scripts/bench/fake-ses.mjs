// A local stand-in for Amazon SES v2 at its HTTP boundary, for the bench: it answers
// SendEmail (POST /v2/email/outbound-emails) as SES does, {"MessageId": ...}, after
// `latencyMs`, and refuses requests without a SigV4 Authorization header or raw content.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

export function startFakeSes({ latencyMs = 30 } = {}) {
  const counts = { sent: 0, refused: 0, inFlight: 0, maxInFlight: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const answer = (status, body, headers = {}) => {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.method !== "POST" || req.url !== "/v2/email/outbound-emails") return answer(404, { message: `no ${req.method} ${req.url} here` });
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        body = null;
      }
      if (
        !/^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/ses\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.test(
          req.headers.authorization ?? "",
        )
      ) {
        counts.refused++;
        return answer(403, { message: "missing or malformed SigV4 signature" }, { "x-amzn-ErrorType": "AccessDeniedException" });
      }
      if (typeof body?.Content?.Raw?.Data !== "string" || body.Content.Raw.Data.length === 0) {
        counts.refused++;
        return answer(400, { message: "Content.Raw.Data is required" }, { "x-amzn-ErrorType": "BadRequestException" });
      }
      counts.inFlight++;
      counts.maxInFlight = Math.max(counts.maxInFlight, counts.inFlight);
      setTimeout(() => {
        counts.inFlight--;
        counts.sent++;
        answer(200, { MessageId: `0100${randomUUID().replace(/-/g, "")}-000000` });
      }, latencyMs);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, counts, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
