// SVG files are bundled as raw strings so LabIcon can theme them.
declare module '*.svg' {
  const value: string;
  export default value;
}
