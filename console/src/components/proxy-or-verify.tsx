/**
 * The two ways a key is used, said where an administrator reads a key's traffic: through the proxy,
 * or by a backend asking `POST /tollgate/verify`; the guide that compares them ships with Tollgate.
 */
export function ProxyOrVerify() {
  return (
    <details class="help-note">
      <summary>Proxy or verify?</summary>
      <p>
        A key is checked in one of two ways, with the same limits, refusals and usage. <strong>Proxy:</strong>{' '}
        Tollgate stands in front of your backend and every request passes through it; nothing changes in the
        backend, which must be reachable only through Tollgate. <strong>Verify:</strong> your server asks
        Tollgate (<span class="mono">POST /tollgate/verify</span>, or the middleware of{' '}
        <span class="mono">@tollgate/client</span>) and serves the request itself; for serverless and edge
        functions, or a backend behind its own load balancer, as long as every route asks.
      </p>
      <p>
        The guide <span class="mono">docs/guides/verify-and-client.md</span>, in Tollgate’s documentation,
        compares them and shows the middleware.
      </p>
    </details>
  );
}
