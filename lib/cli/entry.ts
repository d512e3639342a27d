/** The `varve` process: runs the CLI on the process arguments and exits with its code. */
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));
