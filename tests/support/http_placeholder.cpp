// placeholder until the fake upstream lands
namespace keyshim::test {}
