//===- HectorTypes.td - Hector value and weight types ------*- tablegen -*-===//
//
// !hector.value<SPACE, [DIMS]> and !hector.weight<SLICING, [DIMS]>. A dimension written `Nh`
// (e.g. `4h`) is the head dimension.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTORTYPES_TD
#define HECTOR_DIALECT_HECTORTYPES_TD

include "hector/Dialect/HectorAttrs.td"
include "mlir/IR/AttrTypeBase.td"

class Hector_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Hector_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Hector_ValueType : Hector_Type<"Value", "value"> {
  let summary = "a table of rows in an index space";
  let description = [{
    A value is a table with one row per element of its index space (nodes, edges, unique
    (node, relation) pairs, relations, node types, or a single broadcast row for `none`). Every row
    is a tensor of shape DIMS; `[]` is a scalar row. At most one dimension is the head dimension,
    written `Nh`, and it must be the first one. There is no element type: kernels are
    instantiated for float32 and float64 at run time.

    Example:

    ```mlir
    !hector.value<node, [64]>
    !hector.value<edge, [4h, 16]>
    !hector.value<none, []>
    ```
  }];
  let parameters = (ins
    "::hector::Space":$space,
    ArrayRefParameter<"int64_t", "row shape">:$dims,
    "int64_t":$headAxis);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The row shape (dimensions and head axis).
    ::hector::RowShape getShape() const { return {getDims(), getHeadAxis()}; }
    /// The same rows with another index space.
    ValueType withSpace(::hector::Space space) const {
      return get(getContext(), space, getDims(), getHeadAxis());
    }
    /// A value type of the given space and row shape.
    static ValueType get(::mlir::MLIRContext *context, ::hector::Space space,
                         ::hector::RowShape shape) {
      return get(context, space, shape.dims, shape.headAxis);
    }
  }];
}

def Hector_WeightType : Hector_Type<"Weight", "weight"> {
  let summary = "a learned or derived weight, sliced per relation, per node type, or not at all";
  let description = [{
    A weight holds one tensor of shape DIMS per relation (`relation`: run-time tensor
    `[R, DIMS...]`), per node type (`ntype`: `[T, DIMS...]`), or a single one (`none`). At most one
    dimension is the head dimension, written `Nh`, at any position.

    Example:

    ```mlir
    !hector.weight<relation, [64, 16]>
    !hector.weight<ntype, [64, 4h, 16]>
    ```
  }];
  let parameters = (ins
    "::hector::Slicing":$slicing,
    ArrayRefParameter<"int64_t", "slice shape">:$dims,
    "int64_t":$headAxis);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The slice shape (dimensions and head axis).
    ::hector::RowShape getShape() const { return {getDims(), getHeadAxis()}; }
    /// A weight type of the given slicing and slice shape.
    static WeightType get(::mlir::MLIRContext *context, ::hector::Slicing slicing,
                          ::hector::RowShape shape) {
      return get(context, slicing, shape.dims, shape.headAxis);
    }
  }];
}

#endif // HECTOR_DIALECT_HECTORTYPES_TD
