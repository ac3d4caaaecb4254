// Host-side dispatch shared by the GPU backends and the emulated one: for each
// part of a SellCopy, the storage type its values are read as (the part's
// format, or the segments read of split storage) and the summation order,
// then one launch of the kernel instantiated for them.
#pragma once

#include "petscmp/core/sell_copy.hpp"
#include "row_sum.hpp"
#include "sell_spmv.hpp"

namespace petscmp {

// Calls launch(type_tag<S>{}, order tag, narrow tag) for a part stored in
// `format` (or `segments` planes), read at `read` segments (0: all), with
// 16-bit column offsets or not.
template <typename Fn>
void dispatch_part(Format format, int segments, int read, SumOrder order, bool narrow, Fn &&launch)
{
  auto with_type = [&](auto tag) {
    dispatch_order(order, [&](auto o) {
      if (narrow)
        launch(tag, o, std::true_type{});
      else
        launch(tag, o, std::false_type{});
    });
  };
  if (segments > 1)
    dispatch_segments(segments, read, with_type);
  else
    dispatch_format(format, with_type);
}

} // namespace petscmp
