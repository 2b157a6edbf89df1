#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map5 = affine_map<(d0, d1, d2) -> (d2)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d5)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d1, d5)>
#map10 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map11 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map12 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#map13 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1, d5)>
#map14 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d2, d4)>
#map15 = affine_map<() -> ()>
#map16 = affine_map<(d0, d1, d2) -> (0, 0, 0)>
#map17 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#map18 = affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>
#map19 = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
#map20 = affine_map<(d0, d1, d2, d3) -> (d3)>
#map21 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d4, d5, d1)>
#map22 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d2, d4, d3)>
#map23 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
module {
  func.func @block_loss_grad(%arg0: tensor<8x256x256xf32> {bufferization.writable = false}, %arg1: tensor<256xf32> {bufferization.writable = false}, %arg2: tensor<256xf32> {bufferization.writable = false}, %arg3: tensor<256x256xf32> {bufferization.writable = false}, %arg4: tensor<256x256xf32> {bufferization.writable = false}, %arg5: tensor<256x256xf32> {bufferization.writable = false}, %arg6: tensor<256x256xf32> {bufferization.writable = false}, %arg7: tensor<256xf32> {bufferization.writable = false}, %arg8: tensor<256xf32> {bufferization.writable = false}, %arg9: tensor<256x1024xf32> {bufferization.writable = false}, %arg10: tensor<1024xf32> {bufferization.writable = false}, %arg11: tensor<1024x256xf32> {bufferization.writable = false}, %arg12: tensor<256xf32> {bufferization.writable = false}, %arg13: tensor<f32> {bufferization.writable = false}) -> (tensor<f32>, tensor<256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x1024xf32>, tensor<1024xf32>, tensor<1024x256xf32>, tensor<256xf32>) attributes {llvm.emit_c_interface} {
    %cst = arith.constant 1.90734863E-6 : f32
    %cst_0 = arith.constant 2.50662827 : f32
    %cst_1 = arith.constant -5.000000e-01 : f32
    %cst_2 = arith.constant 5.242880e+05 : f32
    %cst_3 = arith.constant -1.000000e+00 : f32
    %cst_4 = arith.constant -0.0142647391 : f32
    %cst_5 = arith.constant -0.00737332925 : f32
    %cst_6 = arith.constant -0.00168282702 : f32
    %cst_7 = arith.constant -2.13374049E-4 : f32
    %cst_8 = arith.constant -1.45660715E-5 : f32
    %cst_9 = arith.constant -0.0160960332 : f32
    %cst_10 = arith.constant -2.954600e-03 : f32
    %cst_11 = arith.constant -7.34990637E-4 : f32
    %cst_12 = arith.constant -5.69250624E-5 : f32
    %cst_13 = arith.constant -2.10102394E-6 : f32
    %cst_14 = arith.constant 2.77068146E-8 : f32
    %cst_15 = arith.constant -2.72614237E-10 : f32
    %cst_16 = arith.constant 4.000000e+00 : f32
    %cst_17 = arith.constant -4.000000e+00 : f32
    %cst_18 = arith.constant 1.41421354 : f32
    %c128_i64 = arith.constant 128 : i64
    %cst_19 = arith.constant 2.000000e+00 : f32
    %c23_i32 = arith.constant 23 : i32
    %c126_i32 = arith.constant 126 : i32
    %cst_20 = arith.constant 1.000000e+00 : f32
    %cst_21 = arith.constant 0.166666657 : f32
    %cst_22 = arith.constant 0.0416657962 : f32
    %cst_23 = arith.constant 0.00833345205 : f32
    %cst_24 = arith.constant 0.00139819994 : f32
    %cst_25 = arith.constant 1.98756912E-4 : f32
    %cst_26 = arith.constant -2.12194442E-4 : f32
    %cst_27 = arith.constant 0.693359375 : f32
    %cst_28 = arith.constant 5.000000e-01 : f32
    %cst_29 = arith.constant 1.44269502 : f32
    %cst_30 = arith.constant 88.7228317 : f32
    %cst_31 = arith.constant -87.3365402 : f32
    %cst_32 = arith.constant 0x7F800000 : f32
    %cst_33 = arith.constant 0xFF800000 : f32
    %cst_34 = arith.constant 1.250000e-01 : f32
    %c64 = arith.constant 64 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %cst_35 = arith.constant 9.99999974E-6 : f32
    %cst_36 = arith.constant 2.560000e+02 : f32
    %cst_37 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<8x256xf32>
    %1 = linalg.fill ins(%cst_37 : f32) outs(%0 : tensor<8x256xf32>) -> tensor<8x256xf32>
    %expanded = tensor.expand_shape %arg0 [[0], [1, 2], [3]] output_shape [8, 256, 1, 256] : tensor<8x256x256xf32> into tensor<8x256x1x256xf32>
    %expanded_38 = tensor.expand_shape %0 [[0], [1, 2]] output_shape [8, 256, 1] : tensor<8x256xf32> into tensor<8x256x1xf32>
    %2 = linalg.fill ins(%cst_37 : f32) outs(%expanded_38 : tensor<8x256x1xf32>) -> tensor<8x256x1xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded : tensor<8x256x1x256xf32>) outs(%2 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.addf %out, %in : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x1xf32>
    %4 = tensor.empty() : tensor<8x256x1xf32>
    %5 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<8x256x1xf32>) outs(%4 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.divf %in, %cst_36 : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x1xf32>
    %6 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %5 : tensor<8x256x256xf32>, tensor<8x256x1xf32>) outs(%1 : tensor<8x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.subf %in, %in_61 : f32
      %72 = arith.mulf %71, %71 : f32
      %73 = arith.addf %out, %72 : f32
      linalg.yield %73 : f32
    } -> tensor<8x256xf32>
    %expanded_39 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [8, 256, 1] : tensor<8x256xf32> into tensor<8x256x1xf32>
    %7 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_39 : tensor<8x256x1xf32>) outs(%4 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.divf %in, %cst_36 : f32
      %72 = arith.addf %71, %cst_35 : f32
      %73 = math.sqrt %72 : f32
      linalg.yield %73 : f32
    } -> tensor<8x256x1xf32>
    %8 = tensor.empty() : tensor<8x256x256xf32>
    %9 = linalg.generic {indexing_maps = [#map2, #map3, #map3, #map5, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %7, %5, %arg1, %arg2 : tensor<8x256x256xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>, tensor<256xf32>, tensor<256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %in_63: f32, %in_64: f32, %out: f32):
      %71 = arith.subf %in, %in_62 : f32
      %72 = arith.divf %71, %in_61 : f32
      %73 = arith.mulf %72, %in_63 : f32
      %74 = arith.addf %73, %in_64 : f32
      linalg.yield %74 : f32
    } -> tensor<8x256x256xf32>
    %10 = tensor.empty() : tensor<2048x256xf32>
    %expanded_40 = tensor.expand_shape %10 [[0, 1], [2]] output_shape [8, 256, 256] : tensor<2048x256xf32> into tensor<8x256x256xf32>
    %11 = linalg.fill ins(%cst_37 : f32) outs(%expanded_40 : tensor<8x256x256xf32>) -> tensor<8x256x256xf32>
    %12 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%9, %arg3 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %13 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%9, %arg4 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %14 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%9, %arg5 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %15 = tensor.empty() : tensor<8x4x1x256x256xf32>
    %16:2 = scf.forall (%arg14) in (2) shared_outs(%arg15 = %8, %arg16 = %15) -> (tensor<8x256x256xf32>, tensor<8x4x1x256x256xf32>) {
      %71 = arith.muli %arg14, %c4 : index
      %72 = tensor.empty() : tensor<4x256x256xf32>
      %73 = tensor.empty() : tensor<4x4x1x256x256xf32>
      %74:2 = scf.for %arg17 = %c0 to %c16 step %c1 iter_args(%arg18 = %72, %arg19 = %73) -> (tensor<4x256x256xf32>, tensor<4x4x1x256x256xf32>) {
        %75 = arith.divui %arg17, %c4 : index
        %76 = arith.remui %arg17, %c4 : index
        %77 = arith.addi %71, %75 : index
        %78 = arith.muli %76, %c64 : index
        %extracted_slice = tensor.extract_slice %12[%77, 0, %78] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %extracted_slice_61 = tensor.extract_slice %13[%77, 0, %78] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %extracted_slice_62 = tensor.extract_slice %14[%77, 0, %78] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %expanded_63 = tensor.expand_shape %extracted_slice [[0], [1], [2, 3, 4]] output_shape [1, 256, 1, 1, 64] : tensor<1x256x64xf32> into tensor<1x256x1x1x64xf32>
        %expanded_64 = tensor.expand_shape %extracted_slice_61 [[0], [1], [2, 3]] output_shape [1, 256, 1, 64] : tensor<1x256x64xf32> into tensor<1x256x1x64xf32>
        %expanded_65 = tensor.expand_shape %extracted_slice_62 [[0], [1], [2, 3]] output_shape [1, 256, 1, 64] : tensor<1x256x64xf32> into tensor<1x256x1x64xf32>
        %79 = tensor.empty() : tensor<1x256x64xf32>
        %80 = tensor.empty() : tensor<1x1x1x256x256xf32>
        %81 = linalg.fill ins(%cst_37 : f32) outs(%80 : tensor<1x1x1x256x256xf32>) -> tensor<1x1x1x256x256xf32>
        %extracted_slice_66 = tensor.extract_slice %expanded_63[0, 0, 0, 0, 0] [1, 128, 1, 1, 64] [1, 1, 1, 1, 1] : tensor<1x256x1x1x64xf32> to tensor<1x128x1x1x64xf32>
        %extracted_slice_67 = tensor.extract_slice %expanded_64[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x256x1x64xf32> to tensor<1x128x1x64xf32>
        %extracted_slice_68 = tensor.extract_slice %expanded_65[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x256x1x64xf32> to tensor<1x128x1x64xf32>
        %82 = tensor.empty() : tensor<1x1x1x128x128xf32>
        %83 = linalg.fill ins(%cst_37 : f32) outs(%82 : tensor<1x1x1x128x128xf32>) -> tensor<1x1x1x128x128xf32>
        %84 = linalg.generic {indexing_maps = [#map8, #map9, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_66, %extracted_slice_67 : tensor<1x128x1x1x64xf32>, tensor<1x128x1x64xf32>) outs(%83 : tensor<1x1x1x128x128xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = arith.mulf %in, %in_76 : f32
          %106 = arith.addf %out, %105 : f32
          linalg.yield %106 : f32
        } -> tensor<1x1x1x128x128xf32>
        %85 = linalg.generic {indexing_maps = [#map11, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%84 : tensor<1x1x1x128x128xf32>) outs(%82 : tensor<1x1x1x128x128xf32>) {
        ^bb0(%in: f32, %out: f32):
          %105 = arith.mulf %in, %cst_34 : f32
          %106 = arith.cmpf une, %105, %cst_33 : f32
          %107 = linalg.index 4 : index
          %108 = arith.index_cast %107 : index to i64
          %109 = linalg.index 3 : index
          %110 = arith.index_cast %109 : index to i64
          %111 = arith.cmpi sle, %108, %110 : i64
          %112 = arith.andi %111, %106 : i1
          %113 = arith.select %112, %105, %cst_33 : f32
          linalg.yield %113 : f32
        } -> tensor<1x1x1x128x128xf32>
        %86 = tensor.empty() : tensor<1x1x1x128xf32>
        %87 = linalg.fill ins(%cst_33 : f32) outs(%86 : tensor<1x1x1x128xf32>) -> tensor<1x1x1x128xf32>
        %88 = linalg.generic {indexing_maps = [#map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%85 : tensor<1x1x1x128x128xf32>) outs(%87 : tensor<1x1x1x128xf32>) {
        ^bb0(%in: f32, %out: f32):
          %105 = arith.maximumf %in, %out : f32
          linalg.yield %105 : f32
        } -> tensor<1x1x1x128xf32>
        %89 = linalg.generic {indexing_maps = [#map11, #map12, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%85, %88 : tensor<1x1x1x128x128xf32>, tensor<1x1x1x128xf32>) outs(%82 : tensor<1x1x1x128x128xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = math.absf %in_76 : f32
          %106 = arith.cmpf olt, %105, %cst_32 : f32
          %107 = arith.select %106, %in_76, %cst_37 : f32
          %108 = arith.cmpf une, %in, %cst_33 : f32
          %109 = arith.subf %in, %107 : f32
          %110 = arith.maximumf %109, %cst_31 : f32
          %111 = arith.minimumf %110, %cst_30 : f32
          %112 = arith.mulf %111, %cst_29 : f32
          %113 = arith.addf %112, %cst_28 : f32
          %114 = math.floor %113 : f32
          %115 = arith.mulf %114, %cst_27 : f32
          %116 = arith.subf %111, %115 : f32
          %117 = arith.mulf %114, %cst_26 : f32
          %118 = arith.subf %116, %117 : f32
          %119 = arith.mulf %118, %cst_25 : f32
          %120 = arith.addf %119, %cst_24 : f32
          %121 = arith.mulf %120, %118 : f32
          %122 = arith.addf %121, %cst_23 : f32
          %123 = arith.mulf %122, %118 : f32
          %124 = arith.addf %123, %cst_22 : f32
          %125 = arith.mulf %124, %118 : f32
          %126 = arith.addf %125, %cst_21 : f32
          %127 = arith.mulf %126, %118 : f32
          %128 = arith.addf %127, %cst_28 : f32
          %129 = arith.mulf %118, %118 : f32
          %130 = arith.mulf %128, %129 : f32
          %131 = arith.addf %130, %118 : f32
          %132 = arith.addf %131, %cst_20 : f32
          %133 = arith.fptosi %114 : f32 to i32
          %134 = arith.addi %133, %c126_i32 : i32
          %135 = arith.shli %134, %c23_i32 : i32
          %136 = arith.bitcast %135 : i32 to f32
          %137 = arith.mulf %132, %136 : f32
          %138 = arith.mulf %137, %cst_19 : f32
          %139 = arith.cmpf olt, %109, %cst_31 : f32
          %140 = arith.select %139, %cst_37, %138 : f32
          %141 = arith.cmpf ogt, %109, %cst_30 : f32
          %142 = arith.select %141, %cst_32, %140 : f32
          %143 = arith.cmpf une, %109, %109 : f32
          %144 = arith.select %143, %109, %142 : f32
          %145 = arith.select %108, %144, %cst_37 : f32
          linalg.yield %145 : f32
        } -> tensor<1x1x1x128x128xf32>
        %90 = linalg.fill ins(%cst_37 : f32) outs(%86 : tensor<1x1x1x128xf32>) -> tensor<1x1x1x128xf32>
        %91 = linalg.generic {indexing_maps = [#map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%89 : tensor<1x1x1x128x128xf32>) outs(%90 : tensor<1x1x1x128xf32>) {
        ^bb0(%in: f32, %out: f32):
          %105 = arith.addf %in, %out : f32
          linalg.yield %105 : f32
        } -> tensor<1x1x1x128xf32>
        %92 = linalg.generic {indexing_maps = [#map11, #map12, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%89, %91 : tensor<1x1x1x128x128xf32>, tensor<1x1x1x128xf32>) outs(%82 : tensor<1x1x1x128x128xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = arith.cmpf ogt, %in_76, %cst_37 : f32
          %106 = arith.divf %in, %in_76 : f32
          %107 = arith.select %105, %106, %cst_37 : f32
          linalg.yield %107 : f32
        } -> tensor<1x1x1x128x128xf32>
        %93 = tensor.empty() : tensor<1x128x1x1x64xf32>
        %94 = linalg.fill ins(%cst_37 : f32) outs(%93 : tensor<1x128x1x1x64xf32>) -> tensor<1x128x1x1x64xf32>
        %95 = linalg.generic {indexing_maps = [#map13, #map14, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%92, %extracted_slice_68 : tensor<1x1x1x128x128xf32>, tensor<1x128x1x64xf32>) outs(%94 : tensor<1x128x1x1x64xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = arith.mulf %in, %in_76 : f32
          %106 = arith.addf %out, %105 : f32
          linalg.yield %106 : f32
        } -> tensor<1x128x1x1x64xf32>
        %collapsed = tensor.collapse_shape %95 [[0], [1], [2, 3, 4]] : tensor<1x128x1x1x64xf32> into tensor<1x128x64xf32>
        %inserted_slice = tensor.insert_slice %collapsed into %79[0, 0, 0] [1, 128, 64] [1, 1, 1] : tensor<1x128x64xf32> into tensor<1x256x64xf32>
        %inserted_slice_69 = tensor.insert_slice %92 into %81[0, 0, 0, 0, 0] [1, 1, 1, 128, 128] [1, 1, 1, 1, 1] : tensor<1x1x1x128x128xf32> into tensor<1x1x1x256x256xf32>
        %extracted_slice_70 = tensor.extract_slice %expanded_63[0, 128, 0, 0, 0] [1, 128, 1, 1, 64] [1, 1, 1, 1, 1] : tensor<1x256x1x1x64xf32> to tensor<1x128x1x1x64xf32>
        %96 = tensor.empty() : tensor<1x1x1x128x256xf32>
        %97 = linalg.fill ins(%cst_37 : f32) outs(%96 : tensor<1x1x1x128x256xf32>) -> tensor<1x1x1x128x256xf32>
        %98 = linalg.generic {indexing_maps = [#map8, #map9, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_70, %expanded_64 : tensor<1x128x1x1x64xf32>, tensor<1x256x1x64xf32>) outs(%97 : tensor<1x1x1x128x256xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = arith.mulf %in, %in_76 : f32
          %106 = arith.addf %out, %105 : f32
          linalg.yield %106 : f32
        } -> tensor<1x1x1x128x256xf32>
        %99 = linalg.generic {indexing_maps = [#map11, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%98 : tensor<1x1x1x128x256xf32>) outs(%96 : tensor<1x1x1x128x256xf32>) {
        ^bb0(%in: f32, %out: f32):
          %105 = arith.mulf %in, %cst_34 : f32
          %106 = arith.cmpf une, %105, %cst_33 : f32
          %107 = linalg.index 4 : index
          %108 = arith.index_cast %107 : index to i64
          %109 = linalg.index 3 : index
          %110 = arith.index_cast %109 : index to i64
          %111 = arith.addi %110, %c128_i64 : i64
          %112 = arith.cmpi sle, %108, %111 : i64
          %113 = arith.andi %112, %106 : i1
          %114 = arith.select %113, %105, %cst_33 : f32
          linalg.yield %114 : f32
        } -> tensor<1x1x1x128x256xf32>
        %100 = linalg.generic {indexing_maps = [#map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%99 : tensor<1x1x1x128x256xf32>) outs(%87 : tensor<1x1x1x128xf32>) {
        ^bb0(%in: f32, %out: f32):
          %105 = arith.maximumf %in, %out : f32
          linalg.yield %105 : f32
        } -> tensor<1x1x1x128xf32>
        %101 = linalg.generic {indexing_maps = [#map11, #map12, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%99, %100 : tensor<1x1x1x128x256xf32>, tensor<1x1x1x128xf32>) outs(%96 : tensor<1x1x1x128x256xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = math.absf %in_76 : f32
          %106 = arith.cmpf olt, %105, %cst_32 : f32
          %107 = arith.select %106, %in_76, %cst_37 : f32
          %108 = arith.cmpf une, %in, %cst_33 : f32
          %109 = arith.subf %in, %107 : f32
          %110 = arith.maximumf %109, %cst_31 : f32
          %111 = arith.minimumf %110, %cst_30 : f32
          %112 = arith.mulf %111, %cst_29 : f32
          %113 = arith.addf %112, %cst_28 : f32
          %114 = math.floor %113 : f32
          %115 = arith.mulf %114, %cst_27 : f32
          %116 = arith.subf %111, %115 : f32
          %117 = arith.mulf %114, %cst_26 : f32
          %118 = arith.subf %116, %117 : f32
          %119 = arith.mulf %118, %cst_25 : f32
          %120 = arith.addf %119, %cst_24 : f32
          %121 = arith.mulf %120, %118 : f32
          %122 = arith.addf %121, %cst_23 : f32
          %123 = arith.mulf %122, %118 : f32
          %124 = arith.addf %123, %cst_22 : f32
          %125 = arith.mulf %124, %118 : f32
          %126 = arith.addf %125, %cst_21 : f32
          %127 = arith.mulf %126, %118 : f32
          %128 = arith.addf %127, %cst_28 : f32
          %129 = arith.mulf %118, %118 : f32
          %130 = arith.mulf %128, %129 : f32
          %131 = arith.addf %130, %118 : f32
          %132 = arith.addf %131, %cst_20 : f32
          %133 = arith.fptosi %114 : f32 to i32
          %134 = arith.addi %133, %c126_i32 : i32
          %135 = arith.shli %134, %c23_i32 : i32
          %136 = arith.bitcast %135 : i32 to f32
          %137 = arith.mulf %132, %136 : f32
          %138 = arith.mulf %137, %cst_19 : f32
          %139 = arith.cmpf olt, %109, %cst_31 : f32
          %140 = arith.select %139, %cst_37, %138 : f32
          %141 = arith.cmpf ogt, %109, %cst_30 : f32
          %142 = arith.select %141, %cst_32, %140 : f32
          %143 = arith.cmpf une, %109, %109 : f32
          %144 = arith.select %143, %109, %142 : f32
          %145 = arith.select %108, %144, %cst_37 : f32
          linalg.yield %145 : f32
        } -> tensor<1x1x1x128x256xf32>
        %102 = linalg.generic {indexing_maps = [#map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%101 : tensor<1x1x1x128x256xf32>) outs(%90 : tensor<1x1x1x128xf32>) {
        ^bb0(%in: f32, %out: f32):
          %105 = arith.addf %in, %out : f32
          linalg.yield %105 : f32
        } -> tensor<1x1x1x128xf32>
        %103 = linalg.generic {indexing_maps = [#map11, #map12, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%101, %102 : tensor<1x1x1x128x256xf32>, tensor<1x1x1x128xf32>) outs(%96 : tensor<1x1x1x128x256xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = arith.cmpf ogt, %in_76, %cst_37 : f32
          %106 = arith.divf %in, %in_76 : f32
          %107 = arith.select %105, %106, %cst_37 : f32
          linalg.yield %107 : f32
        } -> tensor<1x1x1x128x256xf32>
        %104 = linalg.generic {indexing_maps = [#map13, #map14, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%103, %expanded_65 : tensor<1x1x1x128x256xf32>, tensor<1x256x1x64xf32>) outs(%94 : tensor<1x128x1x1x64xf32>) {
        ^bb0(%in: f32, %in_76: f32, %out: f32):
          %105 = arith.mulf %in, %in_76 : f32
          %106 = arith.addf %out, %105 : f32
          linalg.yield %106 : f32
        } -> tensor<1x128x1x1x64xf32>
        %collapsed_71 = tensor.collapse_shape %104 [[0], [1], [2, 3, 4]] : tensor<1x128x1x1x64xf32> into tensor<1x128x64xf32>
        %inserted_slice_72 = tensor.insert_slice %collapsed_71 into %inserted_slice[0, 128, 0] [1, 128, 64] [1, 1, 1] : tensor<1x128x64xf32> into tensor<1x256x64xf32>
        %inserted_slice_73 = tensor.insert_slice %103 into %inserted_slice_69[0, 0, 0, 128, 0] [1, 1, 1, 128, 256] [1, 1, 1, 1, 1] : tensor<1x1x1x128x256xf32> into tensor<1x1x1x256x256xf32>
        %inserted_slice_74 = tensor.insert_slice %inserted_slice_72 into %arg18[%75, 0, %78] [1, 256, 64] [1, 1, 1] : tensor<1x256x64xf32> into tensor<4x256x256xf32>
        %inserted_slice_75 = tensor.insert_slice %inserted_slice_73 into %arg19[%75, %76, 0, 0, 0] [1, 1, 1, 256, 256] [1, 1, 1, 1, 1] : tensor<1x1x1x256x256xf32> into tensor<4x4x1x256x256xf32>
        scf.yield %inserted_slice_74, %inserted_slice_75 : tensor<4x256x256xf32>, tensor<4x4x1x256x256xf32>
      }
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %74#0 into %arg15[%71, 0, 0] [4, 256, 256] [1, 1, 1] : tensor<4x256x256xf32> into tensor<8x256x256xf32>
        tensor.parallel_insert_slice %74#1 into %arg16[%71, 0, 0, 0, 0] [4, 4, 1, 256, 256] [1, 1, 1, 1, 1] : tensor<4x4x1x256x256xf32> into tensor<8x4x1x256x256xf32>
      }
    }
    %17 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%16#0, %arg6 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %18 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %17 : tensor<8x256x256xf32>, tensor<8x256x256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.addf %in, %in_61 : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x256xf32>
    %expanded_41 = tensor.expand_shape %18 [[0], [1, 2], [3]] output_shape [8, 256, 1, 256] : tensor<8x256x256xf32> into tensor<8x256x1x256xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded_41 : tensor<8x256x1x256xf32>) outs(%2 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.addf %out, %in : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x1xf32>
    %20 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19 : tensor<8x256x1xf32>) outs(%4 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.divf %in, %cst_36 : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x1xf32>
    %21 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%18, %20 : tensor<8x256x256xf32>, tensor<8x256x1xf32>) outs(%1 : tensor<8x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.subf %in, %in_61 : f32
      %72 = arith.mulf %71, %71 : f32
      %73 = arith.addf %out, %72 : f32
      linalg.yield %73 : f32
    } -> tensor<8x256xf32>
    %expanded_42 = tensor.expand_shape %21 [[0], [1, 2]] output_shape [8, 256, 1] : tensor<8x256xf32> into tensor<8x256x1xf32>
    %22 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_42 : tensor<8x256x1xf32>) outs(%4 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.divf %in, %cst_36 : f32
      %72 = arith.addf %71, %cst_35 : f32
      %73 = math.sqrt %72 : f32
      linalg.yield %73 : f32
    } -> tensor<8x256x1xf32>
    %23 = linalg.generic {indexing_maps = [#map2, #map3, #map3, #map5, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18, %22, %20, %arg7, %arg8 : tensor<8x256x256xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>, tensor<256xf32>, tensor<256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %in_63: f32, %in_64: f32, %out: f32):
      %71 = arith.subf %in, %in_62 : f32
      %72 = arith.divf %71, %in_61 : f32
      %73 = arith.mulf %72, %in_63 : f32
      %74 = arith.addf %73, %in_64 : f32
      linalg.yield %74 : f32
    } -> tensor<8x256x256xf32>
    %24 = tensor.empty() : tensor<2048x1024xf32>
    %expanded_43 = tensor.expand_shape %24 [[0, 1], [2]] output_shape [8, 256, 1024] : tensor<2048x1024xf32> into tensor<8x256x1024xf32>
    %25 = linalg.fill ins(%cst_37 : f32) outs(%expanded_43 : tensor<8x256x1024xf32>) -> tensor<8x256x1024xf32>
    %26 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23, %arg9 : tensor<8x256x256xf32>, tensor<256x1024xf32>) outs(%25 : tensor<8x256x1024xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x1024xf32>
    %27 = tensor.empty() : tensor<8x256x1024xf32>
    %28 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%26, %arg10 : tensor<8x256x1024xf32>, tensor<1024xf32>) outs(%27 : tensor<8x256x1024xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.addf %in, %in_61 : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x1024xf32>
    %29 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28 : tensor<8x256x1024xf32>) outs(%27 : tensor<8x256x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.mulf %in, %cst_28 : f32
      %72 = arith.divf %in, %cst_18 : f32
      %73 = arith.maximumf %72, %cst_17 : f32
      %74 = arith.minimumf %73, %cst_16 : f32
      %75 = arith.mulf %74, %74 : f32
      %76 = arith.mulf %75, %cst_15 : f32
      %77 = arith.addf %76, %cst_14 : f32
      %78 = arith.mulf %77, %75 : f32
      %79 = arith.addf %78, %cst_13 : f32
      %80 = arith.mulf %79, %75 : f32
      %81 = arith.addf %80, %cst_12 : f32
      %82 = arith.mulf %81, %75 : f32
      %83 = arith.addf %82, %cst_11 : f32
      %84 = arith.mulf %83, %75 : f32
      %85 = arith.addf %84, %cst_10 : f32
      %86 = arith.mulf %85, %75 : f32
      %87 = arith.addf %86, %cst_9 : f32
      %88 = arith.mulf %74, %87 : f32
      %89 = arith.mulf %75, %cst_8 : f32
      %90 = arith.addf %89, %cst_7 : f32
      %91 = arith.mulf %90, %75 : f32
      %92 = arith.addf %91, %cst_6 : f32
      %93 = arith.mulf %92, %75 : f32
      %94 = arith.addf %93, %cst_5 : f32
      %95 = arith.mulf %94, %75 : f32
      %96 = arith.addf %95, %cst_4 : f32
      %97 = arith.divf %88, %96 : f32
      %98 = arith.maximumf %97, %cst_3 : f32
      %99 = arith.minimumf %98, %cst_20 : f32
      %100 = arith.addf %99, %cst_20 : f32
      %101 = arith.mulf %71, %100 : f32
      linalg.yield %101 : f32
    } -> tensor<8x256x1024xf32>
    %30 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%29, %arg11 : tensor<8x256x1024xf32>, tensor<1024x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %31 = linalg.generic {indexing_maps = [#map2, #map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18, %30, %arg12 : tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %out: f32):
      %71 = arith.addf %in, %in_61 : f32
      %72 = arith.addf %71, %in_62 : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %32 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%31 : tensor<8x256x256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.mulf %in, %in : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x256xf32>
    %33 = tensor.empty() : tensor<f32>
    %34 = linalg.fill ins(%cst_37 : f32) outs(%33 : tensor<f32>) -> tensor<f32>
    %reduced = linalg.reduce ins(%32 : tensor<8x256x256xf32>) outs(%34 : tensor<f32>) dimensions = [0, 1, 2] 
      (%in: f32, %init: f32) {
        %71 = arith.addf %in, %init : f32
        linalg.yield %71 : f32
      }
    %35 = linalg.generic {indexing_maps = [#map15, #map15], iterator_types = []} ins(%reduced : tensor<f32>) outs(%33 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.divf %in, %cst_2 : f32
      linalg.yield %71 : f32
    } -> tensor<f32>
    %36 = linalg.generic {indexing_maps = [#map15, #map15], iterator_types = []} ins(%arg13 : tensor<f32>) outs(%33 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.mulf %in, %cst : f32
      linalg.yield %71 : f32
    } -> tensor<f32>
    %extracted = tensor.extract %36[] : tensor<f32>
    %from_elements = tensor.from_elements %extracted : tensor<1x1x1xf32>
    %37 = linalg.generic {indexing_maps = [#map16, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%from_elements, %31 : tensor<1x1x1xf32>, tensor<8x256x256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %71 : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %38 = tensor.empty() : tensor<256xf32>
    %39 = linalg.fill ins(%cst_37 : f32) outs(%38 : tensor<256xf32>) -> tensor<256xf32>
    %reduced_44 = linalg.reduce ins(%37 : tensor<8x256x256xf32>) outs(%39 : tensor<256xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %71 = arith.addf %in, %init : f32
        linalg.yield %71 : f32
      }
    %40 = tensor.empty() : tensor<256x1024xf32>
    %transposed = linalg.transpose ins(%arg11 : tensor<1024x256xf32>) outs(%40 : tensor<256x1024xf32>) permutation = [1, 0] 
    %41 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%37, %transposed : tensor<8x256x256xf32>, tensor<256x1024xf32>) outs(%25 : tensor<8x256x1024xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x1024xf32>
    %42 = tensor.empty() : tensor<1024x2048xf32>
    %expanded_45 = tensor.expand_shape %42 [[0], [1, 2]] output_shape [1024, 8, 256] : tensor<1024x2048xf32> into tensor<1024x8x256xf32>
    %transposed_46 = linalg.transpose ins(%29 : tensor<8x256x1024xf32>) outs(%expanded_45 : tensor<1024x8x256xf32>) permutation = [2, 0, 1] 
    %43 = tensor.empty() : tensor<1024x256xf32>
    %44 = linalg.fill ins(%cst_37 : f32) outs(%43 : tensor<1024x256xf32>) -> tensor<1024x256xf32>
    %45 = linalg.generic {indexing_maps = [#map17, #map18, #map19], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%transposed_46, %37 : tensor<1024x8x256xf32>, tensor<8x256x256xf32>) outs(%44 : tensor<1024x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<1024x256xf32>
    %46 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28, %41 : tensor<8x256x1024xf32>, tensor<8x256x1024xf32>) outs(%27 : tensor<8x256x1024xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.divf %in, %cst_18 : f32
      %72 = arith.maximumf %71, %cst_17 : f32
      %73 = arith.minimumf %72, %cst_16 : f32
      %74 = arith.mulf %73, %73 : f32
      %75 = arith.mulf %74, %cst_15 : f32
      %76 = arith.addf %75, %cst_14 : f32
      %77 = arith.mulf %76, %74 : f32
      %78 = arith.addf %77, %cst_13 : f32
      %79 = arith.mulf %78, %74 : f32
      %80 = arith.addf %79, %cst_12 : f32
      %81 = arith.mulf %80, %74 : f32
      %82 = arith.addf %81, %cst_11 : f32
      %83 = arith.mulf %82, %74 : f32
      %84 = arith.addf %83, %cst_10 : f32
      %85 = arith.mulf %84, %74 : f32
      %86 = arith.addf %85, %cst_9 : f32
      %87 = arith.mulf %73, %86 : f32
      %88 = arith.mulf %74, %cst_8 : f32
      %89 = arith.addf %88, %cst_7 : f32
      %90 = arith.mulf %89, %74 : f32
      %91 = arith.addf %90, %cst_6 : f32
      %92 = arith.mulf %91, %74 : f32
      %93 = arith.addf %92, %cst_5 : f32
      %94 = arith.mulf %93, %74 : f32
      %95 = arith.addf %94, %cst_4 : f32
      %96 = arith.divf %87, %95 : f32
      %97 = arith.maximumf %96, %cst_3 : f32
      %98 = arith.minimumf %97, %cst_20 : f32
      %99 = arith.addf %98, %cst_20 : f32
      %100 = arith.mulf %99, %cst_28 : f32
      %101 = arith.mulf %in, %cst_1 : f32
      %102 = arith.mulf %101, %in : f32
      %103 = arith.maximumf %102, %cst_31 : f32
      %104 = arith.minimumf %103, %cst_30 : f32
      %105 = arith.mulf %104, %cst_29 : f32
      %106 = arith.addf %105, %cst_28 : f32
      %107 = math.floor %106 : f32
      %108 = arith.mulf %107, %cst_27 : f32
      %109 = arith.subf %104, %108 : f32
      %110 = arith.mulf %107, %cst_26 : f32
      %111 = arith.subf %109, %110 : f32
      %112 = arith.mulf %111, %cst_25 : f32
      %113 = arith.addf %112, %cst_24 : f32
      %114 = arith.mulf %113, %111 : f32
      %115 = arith.addf %114, %cst_23 : f32
      %116 = arith.mulf %115, %111 : f32
      %117 = arith.addf %116, %cst_22 : f32
      %118 = arith.mulf %117, %111 : f32
      %119 = arith.addf %118, %cst_21 : f32
      %120 = arith.mulf %119, %111 : f32
      %121 = arith.addf %120, %cst_28 : f32
      %122 = arith.mulf %111, %111 : f32
      %123 = arith.mulf %121, %122 : f32
      %124 = arith.addf %123, %111 : f32
      %125 = arith.addf %124, %cst_20 : f32
      %126 = arith.fptosi %107 : f32 to i32
      %127 = arith.addi %126, %c126_i32 : i32
      %128 = arith.shli %127, %c23_i32 : i32
      %129 = arith.bitcast %128 : i32 to f32
      %130 = arith.mulf %125, %129 : f32
      %131 = arith.mulf %130, %cst_19 : f32
      %132 = arith.cmpf olt, %102, %cst_31 : f32
      %133 = arith.select %132, %cst_37, %131 : f32
      %134 = arith.cmpf ogt, %102, %cst_30 : f32
      %135 = arith.select %134, %cst_32, %133 : f32
      %136 = arith.cmpf une, %102, %102 : f32
      %137 = arith.select %136, %102, %135 : f32
      %138 = arith.divf %137, %cst_0 : f32
      %139 = arith.mulf %in, %138 : f32
      %140 = arith.addf %100, %139 : f32
      %141 = arith.mulf %140, %in_61 : f32
      linalg.yield %141 : f32
    } -> tensor<8x256x1024xf32>
    %47 = tensor.empty() : tensor<1024xf32>
    %48 = linalg.fill ins(%cst_37 : f32) outs(%47 : tensor<1024xf32>) -> tensor<1024xf32>
    %reduced_47 = linalg.reduce ins(%46 : tensor<8x256x1024xf32>) outs(%48 : tensor<1024xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %71 = arith.addf %in, %init : f32
        linalg.yield %71 : f32
      }
    %transposed_48 = linalg.transpose ins(%arg9 : tensor<256x1024xf32>) outs(%43 : tensor<1024x256xf32>) permutation = [1, 0] 
    %49 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%46, %transposed_48 : tensor<8x256x1024xf32>, tensor<1024x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %50 = tensor.empty() : tensor<256x2048xf32>
    %expanded_49 = tensor.expand_shape %50 [[0], [1, 2]] output_shape [256, 8, 256] : tensor<256x2048xf32> into tensor<256x8x256xf32>
    %transposed_50 = linalg.transpose ins(%23 : tensor<8x256x256xf32>) outs(%expanded_49 : tensor<256x8x256xf32>) permutation = [2, 0, 1] 
    %51 = linalg.fill ins(%cst_37 : f32) outs(%40 : tensor<256x1024xf32>) -> tensor<256x1024xf32>
    %52 = linalg.generic {indexing_maps = [#map17, #map18, #map19], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%transposed_50, %46 : tensor<256x8x256xf32>, tensor<8x256x1024xf32>) outs(%51 : tensor<256x1024xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<256x1024xf32>
    %53 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%22 : tensor<8x256x1xf32>) outs(%4 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %71 = arith.divf %cst_20, %in : f32
      linalg.yield %71 : f32
    } -> tensor<8x256x1xf32>
    %expanded_51 = tensor.expand_shape %49 [[0], [1, 2], [3]] output_shape [8, 256, 1, 256] : tensor<8x256x256xf32> into tensor<8x256x1x256xf32>
    %54 = linalg.generic {indexing_maps = [#map, #map20, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded_51, %arg7 : tensor<8x256x1x256xf32>, tensor<256xf32>) outs(%2 : tensor<8x256x1xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %out, %71 : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x1xf32>
    %55 = linalg.generic {indexing_maps = [#map2, #map2, #map5, #map3, #map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%18, %49, %arg7, %53, %20 : tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<256xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>) outs(%1 : tensor<8x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %in_63: f32, %in_64: f32, %out: f32):
      %71 = arith.mulf %in_61, %in_62 : f32
      %72 = arith.subf %in, %in_64 : f32
      %73 = arith.mulf %72, %in_63 : f32
      %74 = arith.mulf %71, %73 : f32
      %75 = arith.addf %out, %74 : f32
      linalg.yield %75 : f32
    } -> tensor<8x256xf32>
    %expanded_52 = tensor.expand_shape %55 [[0], [1, 2]] output_shape [8, 256, 1] : tensor<8x256xf32> into tensor<8x256x1xf32>
    %56 = linalg.generic {indexing_maps = [#map2, #map2, #map3, #map3, #map5], iterator_types = ["reduction", "reduction", "parallel"]} ins(%18, %49, %53, %20 : tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>) outs(%39 : tensor<256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %in_63: f32, %out: f32):
      %71 = arith.subf %in, %in_63 : f32
      %72 = arith.mulf %71, %in_62 : f32
      %73 = arith.mulf %in_61, %72 : f32
      %74 = arith.addf %out, %73 : f32
      linalg.yield %74 : f32
    } -> tensor<256xf32>
    %reduced_53 = linalg.reduce ins(%49 : tensor<8x256x256xf32>) outs(%39 : tensor<256xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %71 = arith.addf %in, %init : f32
        linalg.yield %71 : f32
      }
    %57 = linalg.generic {indexing_maps = [#map2, #map2, #map2, #map5, #map3, #map3, #map3, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%37, %18, %49, %arg7, %53, %20, %54, %expanded_52 : tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<256xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %in_63: f32, %in_64: f32, %in_65: f32, %in_66: f32, %in_67: f32, %out: f32):
      %71 = arith.divf %in_67, %cst_36 : f32
      %72 = arith.divf %in_66, %cst_36 : f32
      %73 = arith.mulf %in_62, %in_63 : f32
      %74 = arith.subf %73, %72 : f32
      %75 = arith.subf %in_61, %in_65 : f32
      %76 = arith.mulf %75, %in_64 : f32
      %77 = arith.mulf %76, %71 : f32
      %78 = arith.subf %74, %77 : f32
      %79 = arith.mulf %in_64, %78 : f32
      %80 = arith.addf %in, %79 : f32
      linalg.yield %80 : f32
    } -> tensor<8x256x256xf32>
    %58 = tensor.empty() : tensor<256x256xf32>
    %transposed_54 = linalg.transpose ins(%arg6 : tensor<256x256xf32>) outs(%58 : tensor<256x256xf32>) permutation = [1, 0] 
    %59 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%57, %transposed_54 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %transposed_55 = linalg.transpose ins(%16#0 : tensor<8x256x256xf32>) outs(%expanded_49 : tensor<256x8x256xf32>) permutation = [2, 0, 1] 
    %60 = linalg.fill ins(%cst_37 : f32) outs(%58 : tensor<256x256xf32>) -> tensor<256x256xf32>
    %61 = linalg.generic {indexing_maps = [#map17, #map18, #map19], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%transposed_55, %57 : tensor<256x8x256xf32>, tensor<8x256x256xf32>) outs(%60 : tensor<256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<256x256xf32>
    %62:3 = scf.forall (%arg14) in (2) shared_outs(%arg15 = %8, %arg16 = %8, %arg17 = %8) -> (tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<8x256x256xf32>) {
      %71 = arith.muli %arg14, %c4 : index
      %72 = tensor.empty() : tensor<4x256x256xf32>
      %73:3 = scf.for %arg18 = %c0 to %c16 step %c1 iter_args(%arg19 = %72, %arg20 = %72, %arg21 = %72) -> (tensor<4x256x256xf32>, tensor<4x256x256xf32>, tensor<4x256x256xf32>) {
        %74 = arith.divui %arg18, %c4 : index
        %75 = arith.remui %arg18, %c4 : index
        %76 = arith.addi %71, %74 : index
        %77 = arith.muli %75, %c64 : index
        %extracted_slice = tensor.extract_slice %12[%76, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %extracted_slice_61 = tensor.extract_slice %13[%76, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %extracted_slice_62 = tensor.extract_slice %14[%76, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %expanded_63 = tensor.expand_shape %extracted_slice [[0], [1], [2, 3, 4]] output_shape [1, 256, 1, 1, 64] : tensor<1x256x64xf32> into tensor<1x256x1x1x64xf32>
        %expanded_64 = tensor.expand_shape %extracted_slice_61 [[0], [1], [2, 3]] output_shape [1, 256, 1, 64] : tensor<1x256x64xf32> into tensor<1x256x1x64xf32>
        %expanded_65 = tensor.expand_shape %extracted_slice_62 [[0], [1], [2, 3]] output_shape [1, 256, 1, 64] : tensor<1x256x64xf32> into tensor<1x256x1x64xf32>
        %extracted_slice_66 = tensor.extract_slice %16#1[%76, %75, 0, 0, 0] [1, 1, 1, 256, 256] [1, 1, 1, 1, 1] : tensor<8x4x1x256x256xf32> to tensor<1x1x1x256x256xf32>
        %extracted_slice_67 = tensor.extract_slice %59[%76, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<8x256x256xf32> to tensor<1x256x64xf32>
        %78 = tensor.empty() : tensor<1x256x64xf32>
        %79 = tensor.empty() : tensor<1x256x1x64xf32>
        %80 = linalg.fill ins(%cst_37 : f32) outs(%79 : tensor<1x256x1x64xf32>) -> tensor<1x256x1x64xf32>
        %extracted_slice_68 = tensor.extract_slice %expanded_63[0, 0, 0, 0, 0] [1, 128, 1, 1, 64] [1, 1, 1, 1, 1] : tensor<1x256x1x1x64xf32> to tensor<1x128x1x1x64xf32>
        %extracted_slice_69 = tensor.extract_slice %expanded_64[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x256x1x64xf32> to tensor<1x128x1x64xf32>
        %extracted_slice_70 = tensor.extract_slice %expanded_65[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x256x1x64xf32> to tensor<1x128x1x64xf32>
        %extracted_slice_71 = tensor.extract_slice %extracted_slice_66[0, 0, 0, 0, 0] [1, 1, 1, 128, 128] [1, 1, 1, 1, 1] : tensor<1x1x1x256x256xf32> to tensor<1x1x1x128x128xf32>
        %extracted_slice_72 = tensor.extract_slice %extracted_slice_67[0, 0, 0] [1, 128, 64] [1, 1, 1] : tensor<1x256x64xf32> to tensor<1x128x64xf32>
        %expanded_73 = tensor.expand_shape %extracted_slice_72 [[0], [1], [2, 3, 4]] output_shape [1, 128, 1, 1, 64] : tensor<1x128x64xf32> into tensor<1x128x1x1x64xf32>
        %81 = tensor.empty() : tensor<1x1x1x128x128xf32>
        %82 = linalg.fill ins(%cst_37 : f32) outs(%81 : tensor<1x1x1x128x128xf32>) -> tensor<1x1x1x128x128xf32>
        %83 = linalg.generic {indexing_maps = [#map8, #map9, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expanded_73, %extracted_slice_70 : tensor<1x128x1x1x64xf32>, tensor<1x128x1x64xf32>) outs(%82 : tensor<1x1x1x128x128xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x1x1x128x128xf32>
        %84 = tensor.empty() : tensor<1x1x1x128xf32>
        %85 = linalg.fill ins(%cst_37 : f32) outs(%84 : tensor<1x1x1x128xf32>) -> tensor<1x1x1x128xf32>
        %86 = linalg.generic {indexing_maps = [#map11, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%83, %extracted_slice_71 : tensor<1x1x1x128x128xf32>, tensor<1x1x1x128x128xf32>) outs(%85 : tensor<1x1x1x128xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x1x1x128xf32>
        %87 = linalg.generic {indexing_maps = [#map11, #map11, #map12, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%extracted_slice_71, %83, %86 : tensor<1x1x1x128x128xf32>, tensor<1x1x1x128x128xf32>, tensor<1x1x1x128xf32>) outs(%81 : tensor<1x1x1x128x128xf32>) {
        ^bb0(%in: f32, %in_88: f32, %in_89: f32, %out: f32):
          %101 = arith.subf %in_88, %in_89 : f32
          %102 = arith.mulf %in, %101 : f32
          %103 = arith.mulf %102, %cst_34 : f32
          linalg.yield %103 : f32
        } -> tensor<1x1x1x128x128xf32>
        %88 = tensor.empty() : tensor<1x128x1x1x64xf32>
        %89 = linalg.fill ins(%cst_37 : f32) outs(%88 : tensor<1x128x1x1x64xf32>) -> tensor<1x128x1x1x64xf32>
        %90 = linalg.generic {indexing_maps = [#map13, #map14, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%87, %extracted_slice_69 : tensor<1x1x1x128x128xf32>, tensor<1x128x1x64xf32>) outs(%89 : tensor<1x128x1x1x64xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x128x1x1x64xf32>
        %collapsed = tensor.collapse_shape %90 [[0], [1], [2, 3, 4]] : tensor<1x128x1x1x64xf32> into tensor<1x128x64xf32>
        %inserted_slice = tensor.insert_slice %collapsed into %78[0, 0, 0] [1, 128, 64] [1, 1, 1] : tensor<1x128x64xf32> into tensor<1x256x64xf32>
        %extracted_slice_74 = tensor.extract_slice %80[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x256x1x64xf32> to tensor<1x128x1x64xf32>
        %91 = linalg.generic {indexing_maps = [#map21, #map22, #map23], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%87, %extracted_slice_68 : tensor<1x1x1x128x128xf32>, tensor<1x128x1x1x64xf32>) outs(%extracted_slice_74 : tensor<1x128x1x64xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x128x1x64xf32>
        %inserted_slice_75 = tensor.insert_slice %91 into %80[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x128x1x64xf32> into tensor<1x256x1x64xf32>
        %92 = linalg.generic {indexing_maps = [#map21, #map22, #map23], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%extracted_slice_71, %expanded_73 : tensor<1x1x1x128x128xf32>, tensor<1x128x1x1x64xf32>) outs(%extracted_slice_74 : tensor<1x128x1x64xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x128x1x64xf32>
        %inserted_slice_76 = tensor.insert_slice %92 into %80[0, 0, 0, 0] [1, 128, 1, 64] [1, 1, 1, 1] : tensor<1x128x1x64xf32> into tensor<1x256x1x64xf32>
        %extracted_slice_77 = tensor.extract_slice %expanded_63[0, 128, 0, 0, 0] [1, 128, 1, 1, 64] [1, 1, 1, 1, 1] : tensor<1x256x1x1x64xf32> to tensor<1x128x1x1x64xf32>
        %extracted_slice_78 = tensor.extract_slice %extracted_slice_66[0, 0, 0, 128, 0] [1, 1, 1, 128, 256] [1, 1, 1, 1, 1] : tensor<1x1x1x256x256xf32> to tensor<1x1x1x128x256xf32>
        %extracted_slice_79 = tensor.extract_slice %extracted_slice_67[0, 128, 0] [1, 128, 64] [1, 1, 1] : tensor<1x256x64xf32> to tensor<1x128x64xf32>
        %expanded_80 = tensor.expand_shape %extracted_slice_79 [[0], [1], [2, 3, 4]] output_shape [1, 128, 1, 1, 64] : tensor<1x128x64xf32> into tensor<1x128x1x1x64xf32>
        %93 = tensor.empty() : tensor<1x1x1x128x256xf32>
        %94 = linalg.fill ins(%cst_37 : f32) outs(%93 : tensor<1x1x1x128x256xf32>) -> tensor<1x1x1x128x256xf32>
        %95 = linalg.generic {indexing_maps = [#map8, #map9, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expanded_80, %expanded_65 : tensor<1x128x1x1x64xf32>, tensor<1x256x1x64xf32>) outs(%94 : tensor<1x1x1x128x256xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x1x1x128x256xf32>
        %96 = linalg.generic {indexing_maps = [#map11, #map11, #map12], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%95, %extracted_slice_78 : tensor<1x1x1x128x256xf32>, tensor<1x1x1x128x256xf32>) outs(%85 : tensor<1x1x1x128xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x1x1x128xf32>
        %97 = linalg.generic {indexing_maps = [#map11, #map11, #map12, #map11], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%extracted_slice_78, %95, %96 : tensor<1x1x1x128x256xf32>, tensor<1x1x1x128x256xf32>, tensor<1x1x1x128xf32>) outs(%93 : tensor<1x1x1x128x256xf32>) {
        ^bb0(%in: f32, %in_88: f32, %in_89: f32, %out: f32):
          %101 = arith.subf %in_88, %in_89 : f32
          %102 = arith.mulf %in, %101 : f32
          %103 = arith.mulf %102, %cst_34 : f32
          linalg.yield %103 : f32
        } -> tensor<1x1x1x128x256xf32>
        %98 = linalg.generic {indexing_maps = [#map13, #map14, #map10], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%97, %expanded_64 : tensor<1x1x1x128x256xf32>, tensor<1x256x1x64xf32>) outs(%89 : tensor<1x128x1x1x64xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x128x1x1x64xf32>
        %collapsed_81 = tensor.collapse_shape %98 [[0], [1], [2, 3, 4]] : tensor<1x128x1x1x64xf32> into tensor<1x128x64xf32>
        %inserted_slice_82 = tensor.insert_slice %collapsed_81 into %inserted_slice[0, 128, 0] [1, 128, 64] [1, 1, 1] : tensor<1x128x64xf32> into tensor<1x256x64xf32>
        %99 = linalg.generic {indexing_maps = [#map21, #map22, #map23], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%97, %extracted_slice_77 : tensor<1x1x1x128x256xf32>, tensor<1x128x1x1x64xf32>) outs(%inserted_slice_75 : tensor<1x256x1x64xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x256x1x64xf32>
        %100 = linalg.generic {indexing_maps = [#map21, #map22, #map23], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%extracted_slice_78, %expanded_80 : tensor<1x1x1x128x256xf32>, tensor<1x128x1x1x64xf32>) outs(%inserted_slice_76 : tensor<1x256x1x64xf32>) {
        ^bb0(%in: f32, %in_88: f32, %out: f32):
          %101 = arith.mulf %in, %in_88 : f32
          %102 = arith.addf %out, %101 : f32
          linalg.yield %102 : f32
        } -> tensor<1x256x1x64xf32>
        %collapsed_83 = tensor.collapse_shape %99 [[0], [1], [2, 3]] : tensor<1x256x1x64xf32> into tensor<1x256x64xf32>
        %collapsed_84 = tensor.collapse_shape %100 [[0], [1], [2, 3]] : tensor<1x256x1x64xf32> into tensor<1x256x64xf32>
        %inserted_slice_85 = tensor.insert_slice %inserted_slice_82 into %arg19[%74, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<1x256x64xf32> into tensor<4x256x256xf32>
        %inserted_slice_86 = tensor.insert_slice %collapsed_83 into %arg20[%74, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<1x256x64xf32> into tensor<4x256x256xf32>
        %inserted_slice_87 = tensor.insert_slice %collapsed_84 into %arg21[%74, 0, %77] [1, 256, 64] [1, 1, 1] : tensor<1x256x64xf32> into tensor<4x256x256xf32>
        scf.yield %inserted_slice_85, %inserted_slice_86, %inserted_slice_87 : tensor<4x256x256xf32>, tensor<4x256x256xf32>, tensor<4x256x256xf32>
      }
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %73#0 into %arg15[%71, 0, 0] [4, 256, 256] [1, 1, 1] : tensor<4x256x256xf32> into tensor<8x256x256xf32>
        tensor.parallel_insert_slice %73#1 into %arg16[%71, 0, 0] [4, 256, 256] [1, 1, 1] : tensor<4x256x256xf32> into tensor<8x256x256xf32>
        tensor.parallel_insert_slice %73#2 into %arg17[%71, 0, 0] [4, 256, 256] [1, 1, 1] : tensor<4x256x256xf32> into tensor<8x256x256xf32>
      }
    }
    %transposed_56 = linalg.transpose ins(%arg5 : tensor<256x256xf32>) outs(%58 : tensor<256x256xf32>) permutation = [1, 0] 
    %63 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%62#2, %transposed_56 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %transposed_57 = linalg.transpose ins(%9 : tensor<8x256x256xf32>) outs(%expanded_49 : tensor<256x8x256xf32>) permutation = [2, 0, 1] 
    %64 = linalg.generic {indexing_maps = [#map17, #map18, #map19], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%transposed_57, %62#2 : tensor<256x8x256xf32>, tensor<8x256x256xf32>) outs(%60 : tensor<256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<256x256xf32>
    %transposed_58 = linalg.transpose ins(%arg4 : tensor<256x256xf32>) outs(%58 : tensor<256x256xf32>) permutation = [1, 0] 
    %65 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%62#1, %transposed_58 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %66 = linalg.generic {indexing_maps = [#map17, #map18, #map19], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%transposed_57, %62#1 : tensor<256x8x256xf32>, tensor<8x256x256xf32>) outs(%60 : tensor<256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<256x256xf32>
    %transposed_59 = linalg.transpose ins(%arg3 : tensor<256x256xf32>) outs(%58 : tensor<256x256xf32>) permutation = [1, 0] 
    %67 = linalg.generic {indexing_maps = [#map6, #map7, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%62#0, %transposed_59 : tensor<8x256x256xf32>, tensor<256x256xf32>) outs(%11 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %68 = linalg.generic {indexing_maps = [#map17, #map18, #map19], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%transposed_57, %62#0 : tensor<256x8x256xf32>, tensor<8x256x256xf32>) outs(%60 : tensor<256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %out: f32):
      %71 = arith.mulf %in, %in_61 : f32
      %72 = arith.addf %71, %out : f32
      linalg.yield %72 : f32
    } -> tensor<256x256xf32>
    %69 = linalg.generic {indexing_maps = [#map2, #map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%63, %65, %67 : tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<8x256x256xf32>) outs(%8 : tensor<8x256x256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %out: f32):
      %71 = arith.addf %in, %in_61 : f32
      %72 = arith.addf %71, %in_62 : f32
      linalg.yield %72 : f32
    } -> tensor<8x256x256xf32>
    %70 = linalg.generic {indexing_maps = [#map2, #map2, #map3, #map3, #map5], iterator_types = ["reduction", "reduction", "parallel"]} ins(%arg0, %69, %7, %5 : tensor<8x256x256xf32>, tensor<8x256x256xf32>, tensor<8x256x1xf32>, tensor<8x256x1xf32>) outs(%39 : tensor<256xf32>) {
    ^bb0(%in: f32, %in_61: f32, %in_62: f32, %in_63: f32, %out: f32):
      %71 = arith.divf %cst_20, %in_62 : f32
      %72 = arith.subf %in, %in_63 : f32
      %73 = arith.mulf %72, %71 : f32
      %74 = arith.mulf %in_61, %73 : f32
      %75 = arith.addf %out, %74 : f32
      linalg.yield %75 : f32
    } -> tensor<256xf32>
    %reduced_60 = linalg.reduce ins(%69 : tensor<8x256x256xf32>) outs(%39 : tensor<256xf32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %71 = arith.addf %in, %init : f32
        linalg.yield %71 : f32
      }
    return %35, %70, %reduced_60, %68, %66, %64, %61, %56, %reduced_53, %52, %reduced_47, %45, %reduced_44 : tensor<f32>, tensor<256xf32>, tensor<256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256x1024xf32>, tensor<1024xf32>, tensor<1024x256xf32>, tensor<256xf32>
  }
}
