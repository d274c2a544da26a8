// heic-decode ships no types: the part this client uses.
declare module "heic-decode" {
  interface DecodedImage {
    width: number;
    height: number;
    /** RGBA, 4 bytes a pixel. */
    data: Uint8ClampedArray;
  }
  function decode(input: { buffer: Buffer | ArrayBuffer | Uint8Array }): Promise<DecodedImage>;
  export default decode;
}
