// Types for the deployed bundle's zod stand-in (zod.mjs): the same `z` as the package.
import { z } from "zod";
export { z };
export default z;
