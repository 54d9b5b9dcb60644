// Drives a Bowline server with the unmodified better-auth client (bearer transport, as the
// mobile app does for its streams, and as any non-browser client must). Prints one JSON
// object with what the client saw; tests/api/better_auth_client.rs asserts on it.
//
// Usage: node flow.mjs <baseURL> <email>
import { createAuthClient } from "better-auth/client";

const [baseURL, email] = process.argv.slice(2);
const password = "correct horse battery staple";
let token = null;

const client = createAuthClient({
  baseURL,
  fetchOptions: {
    // Node's fetch sends Sec-Fetch-Mode, so sign-in and sign-up need a trusted Origin.
    headers: { origin: baseURL },
    auth: { type: "Bearer", token: () => token ?? "" },
    onSuccess: (ctx) => {
      const issued = ctx.response.headers.get("set-auth-token");
      if (issued) token = issued;
    },
  },
});

const out = {};
const up = await client.signUp.email({ email, password, name: "Ada Lovelace" });
out.signUp = { error: up.error, hasToken: typeof up.data?.token === "string", user: up.data?.user };
out.signUpCreatedAtIsDate = up.data?.user?.createdAt instanceof Date;

const dup = await client.signUp.email({ email, password, name: "Ada Again" });
out.duplicate = { status: dup.error?.status, code: dup.error?.code };

const wrong = await client.signIn.email({ email, password: "not the password" });
out.wrongPassword = { status: wrong.error?.status, code: wrong.error?.code };

token = null;
const signIn = await client.signIn.email({ email, password });
out.signIn = { error: signIn.error, hasToken: typeof signIn.data?.token === "string", redirect: signIn.data?.redirect };
out.headerTokenReceived = token !== null;

const session = await client.getSession();
out.session = {
  error: session.error,
  email: session.data?.user?.email,
  name: session.data?.user?.name,
  expiresAtIsDate: session.data?.session?.expiresAt instanceof Date,
  userIdMatches: session.data?.session?.userId === session.data?.user?.id,
};

const signOut = await client.signOut();
out.signOut = { error: signOut.error, success: signOut.data?.success };

const after = await client.getSession();
out.afterSignOut = { error: after.error, data: after.data };

console.log(JSON.stringify(out));
