# frozen_string_literal: true

# Module#deprecate_constant is missing from Opal; Rack::Multipart::Parser calls it at load
# time. Deprecation warnings are advice, so here it only returns self, as MRI does.
class Module
  def deprecate_constant(*)
    self
  end unless method_defined?(:deprecate_constant)
end
