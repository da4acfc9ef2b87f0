// An OpenID provider (the certified `oidc-provider`) on loopback for the identity tests.
//   node issuer.mjs <port> <audience> <client secret>
// One client, `toolmesh-test`, gets JWT access tokens for <audience> through the client
// credentials grant, with the scopes it asks for among `tools.read tools.admin`.
import Provider from "oidc-provider";

const [port, audience, secret] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "toolmesh-test",
      client_secret: secret,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      scope: "tools.read tools.admin",
    },
  ],
  scopes: ["openid", "tools.read", "tools.admin"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => ({
        scope: "tools.read tools.admin",
        audience: resourceIndicator,
        accessTokenTTL: 300,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
});
provider.proxy = false;

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
