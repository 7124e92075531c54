# frozen_string_literal: true

# Monitor on Node, which Opal lacks: lib/up/pub_sub.rb, compiled into up_node, guards its
# engines with one because on MRI an engine may call back into it while it holds the lock.
# Node runs Ruby on one thread, so there is nothing to exclude; what a Monitor adds to a
# Mutex, entering again from inside, is all that is left, and yielding gives it.
class Monitor
  def synchronize
    yield
  end
  alias mon_synchronize synchronize
end
