# frozen_string_literal: true

# Monitor, which Opal's stdlib lacks and lib/up/pub_sub.rb locks with: one JS thread runs all
# of up_node's Ruby, so there is nothing to wait for, and a Monitor is reentrant anyway.
# Defined only where no Monitor exists (an app's own shim comes first).
unless defined?(::Monitor)
  class Monitor
    def synchronize
      yield
    end

    def mon_synchronize(&block)
      synchronize(&block)
    end
  end
end
