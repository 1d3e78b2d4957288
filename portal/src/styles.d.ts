/** Style sheets are imported for esbuild to bundle into the console's one CSS file; they export nothing. */
declare module '*.css';
