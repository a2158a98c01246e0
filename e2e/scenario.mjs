// Runs the scenario named by argv[2] of a table and prints one JSON line with
// what it observed (or {fatal} with the error's fields, from errorInfo).
export async function runScenario(scenarios, errorInfo) {
  const name = process.argv[2];
  if (!scenarios[name]) {
    console.error("unknown scenario", name);
    process.exit(2);
  }
  try {
    console.log(JSON.stringify(await scenarios[name]()));
  } catch (e) {
    console.log(JSON.stringify({ fatal: errorInfo(e), stack: e?.stack }));
  }
}
