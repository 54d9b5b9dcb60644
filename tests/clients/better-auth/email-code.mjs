// Sign-in by emailed code with the unmodified better-auth client and its emailOTP plugin,
// as the original's web client calls them. Two runs, because the code arrives by mail
// in between: `send` asks for a code; `sign-in <code>` signs in and reads the session.
// Prints one JSON object; tests/api/better_auth_client.rs asserts on it.
//
// Usage: node email-code.mjs <baseURL> <email> send
//        node email-code.mjs <baseURL> <email> sign-in <code>
import { createAuthClient } from "better-auth/client";
import { emailOTPClient } from "better-auth/client/plugins";

const [baseURL, email, step, code] = process.argv.slice(2);
let token = null;

const client = createAuthClient({
  baseURL,
  plugins: [emailOTPClient()],
  fetchOptions: {
    headers: { origin: baseURL },
    auth: { type: "Bearer", token: () => token ?? "" },
    onSuccess: (ctx) => {
      const issued = ctx.response.headers.get("set-auth-token");
      if (issued) token = issued;
    },
  },
});

const out = {};
if (step === "send") {
  const sent = await client.emailOtp.sendVerificationOtp({ email, type: "sign-in" });
  out.send = { error: sent.error, success: sent.data?.success };
} else {
  const wrong = await client.signIn.emailOtp({ email, otp: code === "000000" ? "000001" : "000000" });
  out.wrong = { status: wrong.error?.status, code: wrong.error?.code };
  const signIn = await client.signIn.emailOtp({ email, otp: code });
  out.signIn = {
    error: signIn.error,
    hasToken: typeof signIn.data?.token === "string",
    emailVerified: signIn.data?.user?.emailVerified,
  };
  out.headerTokenReceived = token !== null;
  const session = await client.getSession();
  out.session = { error: session.error, email: session.data?.user?.email };
}
console.log(JSON.stringify(out));
